# want: 5 "jq=" is not a Debian package
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  apt    = ["jq="]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
