# want: 5 platform "linux/s390x" is not one of "linux/amd64", "linux/arm64"
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  platforms = ["linux/s390x"]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
