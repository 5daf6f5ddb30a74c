# want: 2 needs a name expression that uses the matrix keys
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  matrix = {
    python = ["3.10", "3.11"]
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
