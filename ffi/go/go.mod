module example.invalid/tattler/ffi/go

go 1.23
