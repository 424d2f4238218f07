module tattler.dev/tattler

go 1.22
