#!/bin/sh
# What only a Mac can prove about the Seatbelt sandbox (M1). Run it on macOS 14 or 15, as the
# user that runs the node, from the repository (make macos-check) or anywhere:
#
#   sh integration/macos/check.sh            # builds the binaries with go
#   ANET_BIN=/usr/local/libexec/anet sh integration/macos/check.sh   # an installed node
#
# It prints one line per item, "ok" or "FAIL", and exits 1 if any item fails (2 if it
# cannot run at all). The items:
#   probe        anet-sandboxd probe: the profile compiles under /usr/bin/sandbox-exec and
#                every self-check item holds in it (writes inside and outside, secrets, a hard
#                link, the keychain, the endpoint port on 127.0.0.1 and on [::1], decoy
#                loopback ports on both, a decoy unix socket, an external address, UDP to
#                public resolvers, DNS, a host process, another sandbox's process, Mach
#                services and LaunchServices, a launchd job, another terminal, sudo, node,
#                the tools, the limits; and that what real installs need works: a hard
#                link inside the run's dir, a terminal the run makes, Homebrew's OpenSSL
#                files where they exist)
#   item.*       one line for each of the newer self-check items, read from the probe's
#                output: each must be there and ok (a missing item is a miss)
#   self-test    the same items once more through the whole run path (limits wrapper, watch,
#                the check before the turn), with the run's rlimits and environment
#   exec.*       anet-sandboxd exec as an operator uses it: a program runs; a write to the
#                home or the shared /private/tmp and a read of a file outside are refused
#   endpoint.*   the port question, end to end: a real anet-egress endpoint on a loopback
#                port; from inside the profile that port answers (with the run's token) and
#                a second loopback port does not; from outside, no token, no answer; and the
#                internet, by IP literal with the proxy off, is refused by the sandbox itself
#                (connect: Operation not permitted), not by a failed name lookup
#   agent.*      each installed agent (claude, codex) starts in the profile (--version)
#   log          (information only) denials tagged "anet-run" in the unified log
set -u

if [ "$(uname -s)" != Darwin ]; then
	echo "integration/macos/check.sh runs on macOS only (this is $(uname -s))" >&2
	exit 2
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/anet-macos-check.XXXXXX)
egress_pid=
decoy_pid=
cleanup() {
	[ -n "$egress_pid" ] && kill "$egress_pid" 2>/dev/null
	[ -n "$decoy_pid" ] && kill "$decoy_pid" 2>/dev/null
	rm -rf "$work" "$HOME/.anet-macos-check-escape"
}
trap cleanup EXIT INT TERM

if [ -z "${ANET_BIN:-}" ]; then
	if ! (cd "$root" && go build -o "$work/bin/" ./cmd/anet-sandboxd ./cmd/anet-egress); then
		echo "go build failed: install Go, or set ANET_BIN to the directory of anet-sandboxd and anet-egress" >&2
		exit 2
	fi
	ANET_BIN=$work/bin
fi
sbd=$ANET_BIN/anet-sandboxd
egress=$ANET_BIN/anet-egress

failed=0
item() { # name ok|FAIL detail
	if [ "$2" = ok ]; then
		printf 'ok   %-28s %s\n' "$1" "$3"
	else
		printf 'FAIL %-28s %s\n' "$1" "$3"
		failed=1
	fi
}
# expect NAME WANT_STATUS CMD...: the item passes when CMD exits WANT_STATUS ("0" or "nonzero").
expect() {
	name=$1 want=$2
	shift 2
	out=$("$@" 2>&1)
	st=$?
	detail=$(printf '%s' "$out" | tail -1 | cut -c1-100)
	if { [ "$want" = 0 ] && [ $st -eq 0 ]; } || { [ "$want" = nonzero ] && [ $st -ne 0 ]; }; then
		item "$name" ok "exit $st $detail"
	else
		item "$name" FAIL "exit $st (want $want) $detail"
	fi
}

echo "macOS $(sw_vers -productVersion) $(sw_vers -buildVersion) on $(uname -m); $sbd"
echo

echo "== anet-sandboxd probe"
"$sbd" probe > "$work/probe.txt"
st=$?
cat "$work/probe.txt"
[ $st -eq 0 ] && item probe ok "every self-check item holds" || item probe FAIL "exit $st: see the items above"
echo
echo "== self-check items (from the probe above)"
# readable runs only where Homebrew's OpenSSL is installed: it is expected then.
readable=
for f in /opt/homebrew/etc/openssl@3/openssl.cnf /usr/local/etc/openssl@3/openssl.cnf; do
	[ -e "$f" ] && readable=readable
done
for name in own_hardlink endpoint6 decoy_port6 udp dns peer_sandbox services launchd_submit launchd_unstarted other_tty own_pty tools $readable; do
	line=$(grep -E "^(ok  |warn|FAIL) +$name( |\$)" "$work/probe.txt" | head -1)
	detail=$(printf '%s' "$line" | sed -E 's/^(ok  |warn|FAIL) +[^ ]+ +//' | cut -c1-100)
	case $line in
	"") item "item.$name" FAIL "not in the probe's output: the item did not run" ;;
	FAIL*) item "item.$name" FAIL "$detail" ;;
	*) item "item.$name" ok "$detail" ;;
	esac
done
echo
echo "== anet-sandboxd self-test"
"$sbd" self-test
st=$?
[ $st -eq 0 ] && item self-test ok "every item holds through the run path" || item self-test FAIL "exit $st: see the items above"
echo

printf 'anthropic: sk-ant-macos-check-not-a-key\n' > "$work/keys.yaml"
chmod 600 "$work/keys.yaml"

echo "== exec"
expect exec.true 0 "$sbd" exec -- /usr/bin/true
expect exec.write_home nonzero "$sbd" exec --env "T=$HOME/.anet-macos-check-escape" -- /bin/sh -c 'echo escaped > "$T"'
if [ -e "$HOME/.anet-macos-check-escape" ]; then
	item exec.write_home_absent FAIL "the run wrote $HOME/.anet-macos-check-escape"
else
	item exec.write_home_absent ok "nothing was written to the home"
fi
expect exec.read_outside nonzero "$sbd" exec -- /bin/cat "$work/keys.yaml"
expect exec.private_tmp nonzero "$sbd" exec -- /usr/bin/touch "/private/tmp/anet-macos-check-$$"
echo

echo "== endpoint on the host loopback (the port question)"
printf '{"run_id":"macos-check","agent":"claude","listen":"loopback"}\n' > "$work/policy.json"
"$egress" endpoint --policy "$work/policy.json" --socket "$work/unused.sock" --keys "$work/keys.yaml" > "$work/ep.json" 2> "$work/ep.log" &
egress_pid=$!
i=0
while [ ! -s "$work/ep.json" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
addr=$(sed -n 's/.*"addr":"\([^"]*\)".*/\1/p' "$work/ep.json")
ph=$(sed -n 's/.*"placeholder":"\([0-9a-f]*\)".*/\1/p' "$work/ep.json")
if [ -z "$addr" ] || [ -z "$ph" ]; then
	item endpoint.open FAIL "anet-egress endpoint gave no address: $(tail -1 "$work/ep.log")"
else
	item endpoint.open ok "$addr"
	code=$(/usr/bin/curl -s -o /dev/null -w '%{http_code}' -I "http://$addr/")
	[ "$code" = 401 ] && item endpoint.outside_no_token ok "401" || item endpoint.outside_no_token FAIL "HTTP $code, want 401"
	code=$("$sbd" exec --endpoint-addr "$addr" -- /usr/bin/curl -s -o /dev/null -w '%{http_code}' -I -H "x-api-key: $ph" "http://$addr/")
	[ "$code" = 200 ] && item endpoint.inside_token ok "200" || item endpoint.inside_token FAIL "HTTP $code, want 200"
	code=$("$sbd" exec --endpoint-addr "$addr" -- /usr/bin/curl -s -o /dev/null -w '%{http_code}' -I "http://$addr/")
	[ "$code" = 401 ] && item endpoint.inside_no_token ok "401" || item endpoint.inside_no_token FAIL "HTTP $code, want 401"
	port=${addr##*:}
	decoy=$((port + 1))
	[ $decoy -gt 65535 ] && decoy=$((port - 1))
	/usr/bin/nc -l 127.0.0.1 "$decoy" > "$work/decoy.out" 2>/dev/null &
	decoy_pid=$!
	sleep 0.3
	"$sbd" exec --endpoint-addr "$addr" -- /usr/bin/curl -s --max-time 5 -o /dev/null "http://127.0.0.1:$decoy/" 2> "$work/decoy.err"
	st=$?
	if [ $st -ne 0 ] && [ ! -s "$work/decoy.out" ]; then
		item endpoint.neighbour_port ok "127.0.0.1:$decoy refused (curl exit $st), only :$port is open"
	else
		item endpoint.neighbour_port FAIL "127.0.0.1:$decoy reached from the profile (curl exit $st)"
	fi
	# An IP literal with the proxy off: no name to resolve and no CONNECT through the
	# endpoint, so only the sandbox's own refusal of the connect can stop it.
	"$sbd" exec --endpoint-addr "$addr" -- /usr/bin/curl -v --noproxy '*' --max-time 5 -o /dev/null "https://1.1.1.1/" > "$work/internet.err" 2>&1
	st=$?
	if [ $st -ne 0 ] && grep -q 'Operation not permitted' "$work/internet.err"; then
		item endpoint.internet ok "https://1.1.1.1 refused by the sandbox (curl exit $st, connect: Operation not permitted)"
	elif [ $st -ne 0 ]; then
		item endpoint.internet FAIL "https://1.1.1.1 failed (curl exit $st) but not by the sandbox: $(grep -E 'connect|Failed' "$work/internet.err" | tail -1 | cut -c1-80)"
	else
		item endpoint.internet FAIL "https://1.1.1.1 reached from the profile"
	fi
fi
echo

echo "== agents"
found=0
for a in claude codex; do
	p=$(PATH=/opt/homebrew/bin:/usr/local/bin:$HOME/.local/bin:$PATH command -v "$a" 2>/dev/null) || continue
	found=1
	expect "agent.$a" 0 "$sbd" exec -- "$p" --version
done
[ $found -eq 0 ] && echo "(no claude or codex installed: the agents' items are skipped; install one to check it)"
echo

echo "== unified log (information only: reading it may need an administrator)"
n=$(/usr/bin/log show --last 10m --style compact --predicate 'eventMessage CONTAINS "anet-run"' 2>/dev/null | grep -c deny)
echo "info log: ${n:-0} denials tagged anet-run in the last 10 minutes"
echo

if [ $failed -eq 0 ]; then
	echo "result: ok"
else
	echo "result: failed"
fi
exit $failed
