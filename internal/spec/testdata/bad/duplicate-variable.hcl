# want: 5 Variable "a" is already declared
variable "a" {
  default = "1"
}
variable "a" {
  default = "2"
}
