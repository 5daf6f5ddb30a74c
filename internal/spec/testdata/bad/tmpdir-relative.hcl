# want: 6 is not an absolute path
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  runtime {
    tmpdir = "storage/tmp"
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
