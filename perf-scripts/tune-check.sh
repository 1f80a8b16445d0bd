#!/usr/bin/env bash
# Reports which of kernel-config.md's settings are off on this host. Reads only; changes
# nothing. One line per setting: ok, OFF (with the value found and the section to read) or
# n/a (the host has no such thing, e.g. no NVMe disk).
#
#   perf-scripts/tune-check.sh [--shards N] [--data DIR] [--strict]
#
# --shards: the shard count ringmq will run with (default: all CPUs), for the isolation check.
# --data: the data directory, for the disk checks (default: the current directory).
# --strict: exit 1 when anything is OFF (default: exit 0, it is a report).
set -uo pipefail

SHARDS=$(nproc)
DATA=.
STRICT=0
while [ $# -gt 0 ]; do
    case $1 in
    --shards) SHARDS=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --strict) STRICT=1; shift ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
    esac
done

OFF=0
ok() { printf 'ok    %-28s %s\n' "$1" "$2"; }
off() { printf 'OFF   %-28s %s  (kernel-config.md: %s)\n' "$1" "$2" "$3"; OFF=$((OFF + 1)); }
na() { printf 'n/a   %-28s %s\n' "$1" "$2"; }
read_or() { cat "$1" 2>/dev/null || echo "$2"; }

# version_ge A B: A >= B for dotted versions.
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

kernel=$(uname -r)
kernel_num=${kernel%%[-+]*}
if version_ge "$kernel_num" 5.8; then ok kernel "$kernel (≥ 5.8)"; else off kernel "$kernel < 5.8" "Kernel version"; fi

disabled=$(read_or /proc/sys/kernel/io_uring_disabled 0)
if [ "$disabled" = 0 ]; then ok io_uring "enabled"; else off io_uring "kernel.io_uring_disabled=$disabled" "Kernel version"; fi

memlock=$(ulimit -l)
# ringmq's defaults fit in 8 MiB (kernel-config.md); less makes glommio fall back to
# unregistered buffers or refuse to start.
if [ "$memlock" = unlimited ] || [ "$memlock" -ge $((8 * 1024)) ]; then
    ok memlock "ulimit -l $memlock"
else
    off memlock "ulimit -l ${memlock} KiB < 8 MiB" "Locked memory"
fi

nofile=$(ulimit -n)
if [ "$nofile" = unlimited ] || [ "$nofile" -ge 65536 ]; then ok nofile "ulimit -n $nofile"; else off nofile "ulimit -n $nofile < 65536" "File descriptors and sockets"; fi

cmdline=$(cat /proc/cmdline)
isolated=$(read_or /sys/devices/system/cpu/isolated "")
if [ -n "$isolated" ]; then
    ok isolcpus "isolated CPUs: $isolated (ringmq --shards $SHARDS)"
else
    off isolcpus "no isolated CPUs for $SHARDS shard(s)" "CPU isolation and pinning"
fi
if [[ $cmdline == *nohz_full=* ]]; then ok nohz_full "$(grep -o 'nohz_full=[^ ]*' /proc/cmdline)"; else off nohz_full "not on the kernel command line" "CPU isolation and pinning"; fi

if pgrep -x irqbalance >/dev/null; then
    off irqbalance "irqbalance is running (moves NIC IRQs onto shard cores)" "IRQ affinity"
else
    ok irqbalance "not running"
fi

thp=$(read_or /sys/kernel/mm/transparent_hugepage/enabled "absent")
case $thp in
*"[never]"* | *"[madvise]"*) ok thp "$thp" ;;
absent) na thp "no THP on this kernel" ;;
*) off thp "$thp" "Transparent huge pages" ;;
esac

swappiness=$(read_or /proc/sys/vm/swappiness 60)
if [ "$swappiness" -le 10 ]; then ok swappiness "$swappiness"; else off swappiness "$swappiness > 10" "Swappiness"; fi

somaxconn=$(read_or /proc/sys/net/core/somaxconn 0)
if [ "$somaxconn" -ge 4096 ]; then ok somaxconn "$somaxconn"; else off somaxconn "$somaxconn < 4096" "File descriptors and sockets"; fi
rmem=$(read_or /proc/sys/net/core/rmem_max 0)
if [ "$rmem" -ge $((16 << 20)) ]; then ok rmem_max "$rmem"; else off rmem_max "$rmem < 16 MiB" "File descriptors and sockets"; fi
wmem=$(read_or /proc/sys/net/core/wmem_max 0)
if [ "$wmem" -ge $((16 << 20)) ]; then ok wmem_max "$wmem"; else off wmem_max "$wmem < 16 MiB" "File descriptors and sockets"; fi

governors=$(cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor 2>/dev/null | sort -u | tr '\n' ' ')
if [ -z "$governors" ]; then
    na governor "no cpufreq (a VM, or fixed frequency)"
elif [ "$governors" = "performance " ]; then
    ok governor "performance"
else
    off governor "$governors" "CPU frequency governor"
fi

# The disk under --data: its whole-disk name, then the block queue settings.
source_dev=$(df --output=source "$DATA" 2>/dev/null | tail -1)
disk=$(lsblk -no PKNAME "$source_dev" 2>/dev/null | head -1)
[ -n "$disk" ] || disk=$(basename "$source_dev")
queue=/sys/block/$disk/queue
if [ -d "$queue" ]; then
    scheduler=$(cat "$queue/scheduler")
    if [[ $disk == nvme* ]]; then
        if [[ $scheduler == *"[none]"* ]]; then ok scheduler "$disk: $scheduler"; else off scheduler "$disk: $scheduler" "NVMe scheduler and queue depth"; fi
        nr=$(cat "$queue/nr_requests")
        if [ "$nr" -ge 256 ]; then ok nr_requests "$disk: $nr"; else off nr_requests "$disk: $nr < 256" "NVMe scheduler and queue depth"; fi
    else
        na scheduler "$disk is not NVMe ($scheduler)"
    fi
    wc=$(read_or "$queue/write_cache" "?")
    ok write_cache "$disk: $wc (informational: 'write back' needs fdatasync for durability, which ringmq does)"
else
    na disk "no block device found for $DATA ($source_dev)"
fi

echo "$OFF setting(s) off"
if [ "$STRICT" = 1 ] && [ "$OFF" -gt 0 ]; then exit 1; fi
exit 0
