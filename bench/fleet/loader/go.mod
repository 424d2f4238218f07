module tattler.bench/fleet/loader

go 1.26.0
