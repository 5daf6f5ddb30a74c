# want: 3 Invalid expression
image "x" {
  base = = "a"
}
