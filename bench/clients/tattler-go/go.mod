module tattler.bench/tattler-go

go 1.23

require example.invalid/kube-tattler/ffi/go v0.0.0

replace example.invalid/kube-tattler/ffi/go => ../../../ffi/go
