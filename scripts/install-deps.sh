#!/usr/bin/env bash
# Installs stormo's build and test dependencies from Debian 12 packages. Idempotent: packages
# already present are not reinstalled, and apt is not touched at all when nothing is missing.
set -euo pipefail
packages=(
  build-essential cmake pkg-config
  libboost-dev libboost-filesystem-dev libboost-program-options-dev
  libyaml-cpp-dev librange-v3-dev libexpected-dev
  libgtest-dev libgmock-dev
  libsimdjson-dev libsimde-dev libssl-dev libonig-dev libutf8proc-dev libxxhash-dev
  libopenmpi-dev openmpi-bin  # expert parallelism over MPI (docs/distributed.md), built when found
  clang libclang-rt-14-dev  # the libFuzzer harnesses (tests/fuzz), run briefly by ctest
  chromium  # the serve chat page's test drives it headless (tests/serve/chat_page.test.mjs)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
