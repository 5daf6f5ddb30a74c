# want: 2 Variable "index" has no default
variable "index" {
  type = string
}
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  pip_indexes = [var.index]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
