module tattler.bench/tattler-go

go 1.22

require tattler.dev/tattler v0.0.0

replace tattler.dev/tattler => ../../../ffi/go
