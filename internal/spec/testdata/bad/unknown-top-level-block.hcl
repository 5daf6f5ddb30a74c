# want: 2 Blocks of type "target" are not expected here
target "x" {
}
