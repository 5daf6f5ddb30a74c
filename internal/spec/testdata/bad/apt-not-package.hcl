# want: 5 "Not A Package" is not a Debian package
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  apt    = ["Not A Package"]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
