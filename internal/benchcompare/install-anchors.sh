#!/usr/bin/env bash
# Installs the anchors of `make bench-compare` into $1 at the versions the Makefile pins
# (passed in the environment). Nothing is committed: each anchor is fetched by its ordinary
# client (apt, npm, go install) into the cache directory, and kept there between runs.
set -euo pipefail
dir=$1
: "${SRT_VERSION:?}" "${PORTKEY_VERSION:?}" "${HONO_NODE_SERVER_VERSION:?}" "${SMOKESCREEN:?}" "${GO:=go}"

missing=()
for c in bwrap tinyproxy rg socat node npm; do
	command -v "$c" >/dev/null 2>&1 || missing+=("$c")
done
if ((${#missing[@]})); then
	if [[ $(id -u) != 0 ]]; then
		echo "bench-compare needs: ${missing[*]}; as root: apt-get install -y bubblewrap tinyproxy ripgrep socat nodejs npm" >&2
		exit 1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap tinyproxy ripgrep socat nodejs npm >/dev/null
	# The benchmark starts its own tinyproxy on a free port; the distribution's service is not wanted.
	if command -v systemctl >/dev/null 2>&1; then systemctl disable --now tinyproxy >/dev/null 2>&1 || true; fi
fi

npm_pinned() { # dir package.json
	mkdir -p "$1"
	if [[ ! -f $1/package.json ]] || ! cmp -s "$1/package.json" <(printf '%s\n' "$2"); then
		printf '%s\n' "$2" >"$1/package.json"
		rm -rf "$1/node_modules" "$1/package-lock.json"
	fi
	if [[ ! -d $1/node_modules ]]; then
		(cd "$1" && npm install --no-audit --no-fund --loglevel=error)
	fi
}
npm_pinned "$dir/srt" "{\"private\":true,\"dependencies\":{\"@anthropic-ai/sandbox-runtime\":\"$SRT_VERSION\"}}"
# Portkey's streaming needs @hono/node-server pinned below its newest release.
npm_pinned "$dir/portkey" "{\"private\":true,\"dependencies\":{\"@portkey-ai/gateway\":\"$PORTKEY_VERSION\"},\"overrides\":{\"@hono/node-server\":\"$HONO_NODE_SERVER_VERSION\"}}"

if [[ ! -x $dir/bin/smokescreen ]] || [[ $(cat "$dir/bin/smokescreen.version" 2>/dev/null) != "$SMOKESCREEN" ]]; then
	mkdir -p "$dir/bin"
	GOBIN=$dir/bin GOFLAGS=-mod=mod "$GO" install "$SMOKESCREEN"
	echo "$SMOKESCREEN" >"$dir/bin/smokescreen.version"
fi
