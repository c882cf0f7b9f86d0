#!/bin/sh
# What `make venv` needs from the system to build the two extras that publish no Linux wheels:
# pyscard (swig, the PC/SC headers of libpcsclite-dev) and python-evdev (the kernel's input
# headers, linux-libc-dev), both with gcc (docs/operations/id-readers.md). Installs the Debian
# packages when run as root on a machine with apt; otherwise says which to install and fails.
set -eu
missing=""
command -v gcc >/dev/null 2>&1 || missing="$missing gcc"
command -v swig >/dev/null 2>&1 || missing="$missing swig"
[ -e /usr/include/PCSC/winscard.h ] || missing="$missing libpcsclite-dev"
[ -e /usr/include/linux/input.h ] || missing="$missing linux-libc-dev"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "make: installing the build packages of the ID readers' extra:$missing"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
  exit 0
fi
echo "make: the ID readers' extra (pyscard, evdev) builds from source and needs:$missing" >&2
echo "      sudo apt-get install$missing" >&2
exit 1
