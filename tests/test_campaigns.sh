#!/bin/sh
# The validation campaigns' plumbing (validate/campaigns/campaign_tied.sh,
# campaign_untied.sh), run against a stand-in aimdyn that only records its
# arguments and creates the result files the campaigns look for: each
# experiment's ODE files land in that experiment's directory (a campaign
# function once overwrote the loop's directory variable and sent them to
# ./400), every ODE runs with hierarchy.tol = 0 (the tables compare the
# orders over windows longer than the truncation estimate would allow),
# and no agreement table gets more ODE files than aimdyn takes.
set -u
root="${AIMDYN_SOURCE_ROOT:-$(dirname "$0")/..}"
root=$(cd "$root" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/checks.sh"

# the stand-in: logs "COMMAND ARGS..." and touches --out/--name's file
cat >"$work/aimdyn" <<'EOF'
#!/bin/sh
echo "$*" >>"$STUB_LOG"
echo " $* " >"$STUB_LOG.last"
cmd=$1
shift
out=. name=aimdyn d=0
while [ $# -gt 0 ]; do
    case $1 in
    --out) out=$2; shift ;;
    --name) name=$2; shift ;;
    --d) d=$2; shift ;;
    esac
    shift
done
mkdir -p "$out"
case $cmd in
agreement) # aimdyn agreement takes at most 10 --ode (MAX_ORDERS)
    [ "$(grep -o -- ' --ode ' "$STUB_LOG.last" | wc -l)" -le 10 ] || exit 1 ;;
sgd) : >"$out/$name-sgd-d$d.tsv"; : >"$out/$name-sgd-d$d-seeds.tsv" ;;
ode) : >"$out/$name-ode.tsv" ;;
esac
exit 0
EOF
chmod +x "$work/aimdyn"
export STUB_LOG="$work/calls"
mkdir "$work/cwd"

ode_calls_without_tol() { grep '^ode ' "$STUB_LOG" | grep -c -v -- '--set hierarchy.tol=0'; }

# tied: rho05 and he2 call sgd in the foreground before their ODEs
(cd "$work/cwd" && AIMDYN="$work/aimdyn" sh "$root/validate/campaigns/campaign_tied.sh" "$work/tied" \
    rho05 he2 >"$work/out" 2>&1)
check "campaign_tied: runs with the stand-in" $?
for M in 1 2 3 4 5 6; do
    [ -f "$work/tied/rho05/aligned-M$M-ode.tsv" ]
    check "campaign_tied: rho05 ODE M = $M in its directory" $?
done
for g in 0 5; do
    for M in 2 3 4 5; do
        [ -f "$work/tied/he2/he2-g$g-aligned-M$M-ode.tsv" ]
        check "campaign_tied: he2 gamma = $g ODE M = $M in its directory" $?
    done
    [ -f "$work/tied/he2/agreement-g$g.txt" ]
    check "campaign_tied: he2 gamma = $g agreement table in its directory" $?
done
# fig1: 22 ODE files, compared in tables of one closure each
(cd "$work/cwd" && DIMS=400 AIMDYN="$work/aimdyn" sh "$root/validate/campaigns/campaign_tied.sh" \
    "$work/tied" fig1 >"$work/out" 2>&1)
check "campaign_tied fig1: runs with the stand-in" $?
for cl in aligned cumulant free initial; do
    [ -f "$work/tied/fig1/agreement-d400-upto0.4-$cl.txt" ]
    check "campaign_tied fig1: $cl agreement table" $?
done
[ -z "$(ls -A "$work/cwd")" ]
check "campaign_tied: nothing written to the working directory" $?
[ "$(grep -c '^ode ' "$STUB_LOG")" -eq 33 ] && [ "$(ode_calls_without_tol)" -eq 0 ]
check "campaign_tied: all 33 ODE runs with hierarchy.tol=0" $?

: >"$STUB_LOG"
(cd "$work/cwd" && OUT="$work/untied" AIMDYN="$work/aimdyn" \
    sh "$root/validate/campaigns/campaign_untied.sh" ode >"$work/out" 2>&1)
check "campaign_untied ode: runs with the stand-in" $?
[ "$(grep -c '^ode ' "$STUB_LOG")" -gt 0 ] && [ "$(ode_calls_without_tol)" -eq 0 ]
check "campaign_untied: every ODE run with hierarchy.tol=0" $?

: >"$STUB_LOG"
(cd "$work/cwd" && OUT="$work/untied" AIMDYN="$work/aimdyn" \
    sh "$root/validate/campaigns/campaign_untied.sh" high >"$work/out" 2>&1)
check "campaign_untied high: runs with the stand-in" $?
[ "$(grep -c '^ode .*--order 6 ' "$STUB_LOG")" -eq 2 ] &&
    [ "$(grep -c '^ode .*--order 7 ' "$STUB_LOG")" -eq 2 ] &&
    [ "$(grep -c '^ode ' "$STUB_LOG")" -eq 4 ] && [ "$(ode_calls_without_tol)" -eq 0 ]
check "campaign_untied high: He1 and the mixture at M = 6, 7, with hierarchy.tol=0" $?

echo "campaigns: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
