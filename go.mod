module rocklake

go 1.26
