# want: 2 Unclosed configuration block
image "x" {
  base = "registry.example/base:1"
