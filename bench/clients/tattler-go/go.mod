module tattler.bench/tattler-go

go 1.23

require example.invalid/tattler/ffi/go v0.0.0

replace example.invalid/tattler/ffi/go => ../../../ffi/go
