# want: 5 is not a PEP 508 requirement
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  pip    = ["this is not a requirement!!"]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
