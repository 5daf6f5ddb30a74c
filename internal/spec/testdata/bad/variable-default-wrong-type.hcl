# want: 4 does not match its type number
variable "n" {
  type    = number
  default = "abc"
}
