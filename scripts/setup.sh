#!/usr/bin/env bash
# Installs what tapegrad needs to build and test on Debian 12, and nothing
# when everything is already present. Usage: scripts/setup.sh [extra packages]
set -euo pipefail
pkgs=(cmake make gcc g++ pkg-config libopenblas-dev libcriterion-dev libstb-dev libcjson-dev openmpi-bin libopenmpi-dev iproute2 zlib1g-dev dataset-fashion-mnist "$@")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
