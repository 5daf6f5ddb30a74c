# want: 5 pip element 1 is the number 3
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  pip    = ["numpy", 3]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
