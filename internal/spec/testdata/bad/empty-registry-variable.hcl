# want: 6 has an empty registry or path component
variable "registry" {
  default = ""
}
image "x" {
  base   = "${var.registry}/imagectl/base:1"
  python = "3.11"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
