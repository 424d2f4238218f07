module example.invalid/kube-tattler/ffi/go

go 1.23
