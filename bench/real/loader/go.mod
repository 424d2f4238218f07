module tattler.bench/loader

go 1.26.0
