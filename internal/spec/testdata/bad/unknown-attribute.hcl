# want: 5 An argument named "frozn" is not expected here. Did you mean "frozen"?
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  frozn = ["numpy"]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
