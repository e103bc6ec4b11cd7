#!/usr/bin/env bash
# Installs code-server (VS Code in a browser) for the real-editor test, without any download beyond the npm
# registry: @vscode/ripgrep's postinstall would fetch a binary from GitHub, so its cache is seeded with
# Debian's rg first. Needs (as root): apt-get install -y --no-install-recommends libkrb5-dev libxkbfile-dev
# libsecret-1-dev pkg-config ripgrep chromium
#
# Usage: install-code-server.sh [DIR]   (default: editors/vscode/.e2e-tools); prints the code-server path.
set -euo pipefail

CODE_SERVER_VERSION=4.100.3
RIPGREP_CACHE_VERSION=1.15.11          # @vscode/ripgrep version that code-server 4.100.3 pulls in
RIPGREP_ASSET=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:-$here/../../.e2e-tools}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
bin="$dir/node_modules/.bin/code-server"

installed="$(node -p "require('$dir/node_modules/code-server/package.json').version" 2>/dev/null || true)"
if [[ -x "$bin" && "$installed" == "$CODE_SERVER_VERSION" ]]; then
  echo "$bin"
  exit 0
fi

rg_path="$(command -v rg || true)"
if [[ -z "$rg_path" ]]; then
  echo "install-code-server.sh: rg not found; apt-get install ripgrep first" >&2
  exit 1
fi
cache="${TMPDIR:-/tmp}/vscode-ripgrep-cache-$RIPGREP_CACHE_VERSION"
if [[ ! -s "$cache/$RIPGREP_ASSET" ]]; then
  mkdir -p "$cache"
  staging="$(mktemp -d)"
  cp "$rg_path" "$staging/rg"
  tar -czf "$cache/$RIPGREP_ASSET" -C "$staging" rg
  rm -rf "$staging"
fi

# node-gyp compiles code-server's native modules (argon2, ...) against Node's headers and downloads them
# unless npm's nodedir names an installation that has them: the running node's, when it has its headers
# (Debian's nodejs: /usr/include/node) and nodedir is not set already.
if [[ -z "${npm_config_nodedir:-}" ]] && [[ "$(npm config get nodedir 2>/dev/null)" =~ ^(|undefined|null)$ ]]; then
  node_prefix="$(dirname "$(dirname "$(command -v node)")")"
  if [[ -f "$node_prefix/include/node/node.h" ]]; then
    export npm_config_nodedir="$node_prefix"
  fi
fi

cd "$dir"
[[ -f package.json ]] || echo '{"name": "tandem-e2e-tools", "private": true}' > package.json
npm_config_unsafe_perm=true npm_config_yes=true npm install --no-audit --no-fund --foreground-scripts \
  "code-server@$CODE_SERVER_VERSION" >&2
echo "$bin"
