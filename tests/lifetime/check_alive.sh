#!/bin/sh
# Every public function that takes a ctorch object (a tensor, module, optimizer, ...)
# checks that it is alive before using it (ct_alive, ct_all_alive or ct_option_alive
# within the first lines of its body; src/core/object.h), so that the debug lifetime
# mode reports a use after free at the call that made it.
#
#     tests/lifetime/check_alive.sh INCLUDE_DIR SRC_DIR
#
# prints each public function whose definition has no such check and exits 1; exits 0
# when there is none.  Functions written by a macro (unary.c's FLOAT_OP, ...) have no
# plain definition and are not seen here; the opinfo sweep (test_gradcheck_lifetime)
# runs them.
set -u
inc=${1:?usage: check_alive.sh INCLUDE_DIR SRC_DIR}
src=${2:?usage: check_alive.sh INCLUDE_DIR SRC_DIR}
objects='ct_(tensor|node|module|optim|grad_scaler|scheduler|state_dict|dataset|transform|sampler|batch_sampler|loader|generator)'
# The public declarations (joined up to their ';') that take an object by pointer.
names=$(cat "$inc"/ctorch/*.h | awk -v obj="$objects" '
    /^[a-z_][a-z_0-9 ]*[ *]ct_[a-z0-9_]+\(/ && !/^typedef/ { decl = ""; open = 1 }
    open { decl = decl " " $0; if (index($0, ";")) { open = 0; check(decl) } }
    function check(d,   name) {
        if (d !~ ("[(,] *(const )?" obj " *\\* *[a-z_0-9]+ *[,)]")) return
        name = d; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
        print name
    }' | sort -u)
# Definitions: the line naming the function, then its body's first lines.
status=0
for f in "$src"/*/*.c; do
    awk -v names="$names" -v file="$f" '
        BEGIN { n = split(names, a, "\n"); for (i = 1; i <= n; i++) want[a[i]] = 1 }
        function verdict() {
            if (!ok) { printf "%s:%d: %s checks no argument for liveness\n", file, line, cur; bad = 1 }
            cur = ""
        }
        /^[a-z_][a-z_0-9 ]*[ *]\(?ct_[a-z0-9_]+\)?\(/ && !/;[ \t]*$/ {
            match($0, /\(?ct_[a-z0-9_]+\)?\(/)
            name = substr($0, RSTART, RLENGTH - 1)
            gsub(/[()]/, "", name)
            if (name in want) { cur = name; left = 8; ok = 0; line = FNR }
        }
        cur != "" {
            if ($0 ~ /_alive\(/) ok = 1
            # the body ends, or its first lines are past
            if (ok || --left == 0 || $0 ~ /^}/ || (FNR == line && $0 ~ /}[ \t]*$/)) verdict()
        }
        END { if (cur != "") verdict(); exit bad }' "$f" || status=1
done
exit $status
