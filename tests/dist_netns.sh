#!/usr/bin/env bash
# Two ranks on two "hosts": network namespaces joined by a veth pair, OpenMPI
# over TCP (--mca btl tcp,self), mpirun in the first namespace starting the
# second rank's daemon through an `ip netns exec` wrapper (plm_rsh_agent).
# Once they train, the link is cut for good, twice: the link set down, then
# 100% packet loss (tc's netem, or blackhole routes where the kernel has no
# netem). Each time the job must
# end with rank 0 naming rank 1 ("no word from rank 1", --collective-timeout
# 3) instead of hanging; timeout(1) turns a hang into a failure.
# Needs root and iproute2; exits 77 (skipped) with the reason otherwise.
# The namespaces, and every process left in them, go at exit.
# Usage: dist_netns.sh SEQTASK MPIEXEC
set -uo pipefail
seqtask=$1 mpiexec=$2
skip() { echo "dist_netns: skipped: $*"; exit 77; }
fail() { echo "dist_netns: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "creating network namespaces needs root"
command -v ip >/dev/null || skip "no ip command (Debian: apt-get install iproute2)"
tmp=$(mktemp -d)
a="" b=""
drop_ns() {
  for ns in $a $b; do
    pids=$(ip netns pids $ns 2>/dev/null)
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    ip netns del $ns 2>/dev/null
  done
  return 0
}
trap 'drop_ns; rm -rf "$tmp"' EXIT

# Two fresh namespaces for each cut (nothing of the last job, and no link
# state, carries over): 10.77.0.1 (rank 0 and mpirun) <-> 10.77.0.2 (rank 1),
# one veth pair. n numbers them.
make_ns() { # n
  drop_ns
  a=tgA$$_$1 b=tgB$$_$1 va=tgva$$_$1 vb=tgvb$$_$1
  ip netns add $a 2>"$tmp/err" && ip netns add $b 2>>"$tmp/err" ||
    skip "ip netns add failed: $(cat "$tmp/err")"
  { ip link add $va type veth peer name $vb &&
    ip link set $va netns $a && ip link set $vb netns $b &&
    ip -n $a addr add 10.77.0.1/24 dev $va && ip -n $b addr add 10.77.0.2/24 dev $vb &&
    ip -n $a link set lo up && ip -n $b link set lo up &&
    ip -n $a link set $va up && ip -n $b link set $vb up; } 2>"$tmp/err" ||
    skip "cannot join the namespaces with a veth pair: $(cat "$tmp/err")"
  # After rank 0's MPI_Abort, mpirun tells the other host's daemon to end its
  # ranks and waits for it; over a dead link TCP retries that message for
  # net.ipv4.tcp_retries2 (15: about 15 minutes) before mpirun gives the daemon
  # up. 3 (a few seconds) on these two "hosts" (docs/DISTRIBUTED.md).
  for ns in $a $b; do
    ip netns exec $ns sh -c "echo 3 >/proc/sys/net/ipv4/tcp_retries2" || skip "cannot set tcp_retries2"
  done
  # both ends up before anyone connects
  for _ in $(seq 50); do
    ip -n $a link show $va | grep -q 'state UP' && ip -n $b link show $vb | grep -q 'state UP' && return 0
    sleep 0.1
  done
  fail "the veth pair did not come up: $(ip -n $a link show $va) $(ip -n $b link show $vb)"
}

# OpenMPI's rsh launcher runs "AGENT HOST COMMAND...": run it in HOST's namespace
cat >"$tmp/agent" <<EOF
#!/bin/sh
host=\$1; shift
case \$host in
  10.77.0.1) ns=\$(cat $tmp/ns_a) ;;
  10.77.0.2) ns=\$(cat $tmp/ns_b) ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec \$ns sh -c "\$*"
EOF
chmod +x "$tmp/agent"
printf '10.77.0.1 slots=1\n10.77.0.2 slots=1\n' >"$tmp/hosts"
export OMPI_MCA_orte_tmpdir_base=$tmp
# the sanitizer build: OpenMPI's own allocations are not leaks of ours (as in test_dist)
export OMPI_MCA_mca_base_component_disable_dlclose=1
export LSAN_OPTIONS=suppressions=$(cd "$(dirname "$0")" && pwd)/lsan_mpi.supp
flags="--symbols 8 --min-len 1 --max-len 5 --layers 2 --d-model 16 --heads 4 --d-ff 32 --batch 8 --warmup 4
  --lr 0.01 --eval-every 0 --target-acc 0 --threads 1 --steps 1000000 --save-every 20 --collective-timeout 3"

# Starts the job in fresh namespaces and waits until it trains (some rows in
# rank 0's log; the header is one). Returns 1 when it ended first.
start_job() { # name, n
  make_ns $2
  echo $a >"$tmp/ns_a"
  echo $b >"$tmp/ns_b"
  rm -rf "$tmp/out"
  (cd "$tmp" && exec timeout -k 5 90 ip netns exec $a "$mpiexec" --allow-run-as-root -np 2 --hostfile hosts \
    --map-by node --mca plm_rsh_agent "$tmp/agent" --mca btl tcp,self \
    --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
    -x OPENBLAS_NUM_THREADS=1 -x LSAN_OPTIONS "$seqtask" train $flags --out out >"$1.out" 2>"$1.err") &
  job=$!
  local rows=0
  for _ in $(seq 600); do
    rows=$(cat "$tmp/out/log.csv" 2>/dev/null | wc -l)
    [ "$rows" -gt 5 ] && return 0
    kill -0 $job 2>/dev/null || break
    sleep 0.1
  done
  return 1
}

# cut: a function that cuts the link of the running job for good.
# OpenMPI's launcher can fail to start the second host's daemon on a loaded
# machine ("ORTE was unable to reliably start one or more daemons"), before
# any training: that launch, and only that, is tried once more.
run_cut() { # name, n, cut
  local name=$1 n=$2 cut=$3
  if ! start_job "$name" $n; then
    wait $job
    grep -q "ORTE was unable to reliably start" "$tmp/$name.err" && {
      echo "dist_netns: $name: OpenMPI could not start the second daemon; launching again"
      start_job "$name" $((n + 10))
    } || { cat "$tmp/$name.err" >&2; fail "$name: the job did not start training"; }
  fi
  $cut || fail "$name: cannot cut the link ($cut)"
  wait $job
  local st=$?
  [ $st -eq 1 ] || { cat "$tmp/$name.err" >&2; fail "$name: exit status $st, want 1 (124, 137: hung)"; }
  ! grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$tmp/$name.err" || fail "$name: a sanitizer report"
  grep -q "rank 0: no word from rank 1 for .* (--collective-timeout 3 s); ending the job" "$tmp/$name.err" ||
    { cat "$tmp/$name.err" >&2; fail "$name: rank 0 did not name rank 1"; }
  echo "dist_netns: $name: exit status $st: $(grep -o 'rank 0: no word from rank 1 .*' "$tmp/$name.err")"
}

link_down() { ip -n $a link set $va down; }
run_cut "link down" 1 link_down
# 100% loss with the link up: netem where the kernel has it, else routes that
# drop everything between the two addresses, both ways
netem_loss() { ip netns exec $a tc qdisc add dev $va root netem loss 100%; }
blackhole() { ip -n $a route add blackhole 10.77.0.2/32 && ip -n $b route add blackhole 10.77.0.1/32; }
make_ns 0
if ip netns exec $a tc qdisc add dev $va root netem loss 0% 2>/dev/null; then
  run_cut "100% loss (netem)" 2 netem_loss
else
  run_cut "100% loss (blackhole routes)" 2 blackhole
fi
