# want: 5 "numpy===" is not a PEP 508 requirement
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  pip    = ["numpy", "numpy==="]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
