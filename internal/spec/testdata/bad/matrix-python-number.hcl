# want: 3 lists the number 3.1 where a version string is meant
image "x" {
  matrix = {
    python = [3.10, 3.11]
  }
  name   = "x-py${python}"
  base   = "registry.example/base:1"
  python = python
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
