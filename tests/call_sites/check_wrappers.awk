# Lists the public functions of the headers that no macro of their name wraps, so
# that every entry point records its call site (CT_AT, ctorch/base.h).
#
#   awk -f check_wrappers.awk include/ctorch/*.h
#
# A function is a file-scope declaration "type name(params);" outside comments,
# typedefs and preprocessor lines.  It is wrapped when a macro of any header calls it
# inside CT_AT(...): "#define ct_step(opt) CT_AT(ct_step(opt))", or the options form
# "#define ct_sum(t, ...) CT_AT(ct_sum_with(t, ...))".
# Prints "header: name" for each unwrapped one and exits 1 when there is any; with
# -v list=1 it prints the name of every public function instead (one a line).
# ct__site, the recorder itself, is exempt.

function strip_comments(s,    out, i, j) {
    out = ""
    while (length(s) > 0) {
        if (in_comment) {
            j = index(s, "*/")
            if (j == 0) return out
            s = substr(s, j + 2); in_comment = 0; continue
        }
        i = index(s, "/*"); j = index(s, "//")
        if (j > 0 && (i == 0 || j < i)) return out substr(s, 1, j - 1)
        if (i == 0) return out s
        out = out substr(s, 1, i - 1) " "
        s = substr(s, i + 2); in_comment = 1
    }
    return out
}

function statement(s, file,    name, rest) {
    gsub(/[ \t]+/, " ", s); sub(/^ /, "", s)
    if (s ~ /^typedef / || s ~ /^extern "C"/ || index(s, "(") == 0) return
    rest = substr(s, 1, index(s, "(") - 1)
    sub(/ +$/, "", rest)
    if (!match(rest, /[A-Za-z_][A-Za-z_0-9]*$/)) return
    name = substr(rest, RSTART, RLENGTH)
    if (name !~ /^ct_/ || name == "ct__site") return
    if (!(name in where)) { where[name] = file; order[++n] = name }
}

# Marks the functions a macro calls inside CT_AT( ... ).
function wraps(m,    body, id) {
    if (m !~ /^[ \t]*#[ \t]*define/ || !index(m, "CT_AT(")) return
    body = substr(m, index(m, "CT_AT(") + 6)
    while (match(body, /ct_[A-Za-z_0-9]*[ \t]*\(/)) {
        id = substr(body, RSTART, RLENGTH - 1); sub(/[ \t]+$/, "", id)
        wrapped[id] = 1
        body = substr(body, RSTART + RLENGTH)
    }
}

FNR == 1 { in_comment = 0; cont = 0; skip_cpp = 0; depth = 0; acc = "" }
{
    line = $0
    if (cont) { macro = macro " " line; cont = line ~ /\\$/; if (!cont) wraps(macro); next }
    if (!in_comment && line ~ /^[ \t]*#/) {
        macro = line
        if (line !~ /\\$/) wraps(macro)
        if (line ~ /^[ \t]*#[ \t]*ifdef[ \t]+__cplusplus/) skip_cpp = 1
        else if (skip_cpp && line ~ /^[ \t]*#[ \t]*endif/) skip_cpp = 0
        cont = line ~ /\\$/
        next
    }
    if (skip_cpp) next
    line = strip_comments(line)
    for (k = 1; k <= length(line); k++) {
        c = substr(line, k, 1)
        if (c == "{") { if (depth == 0) acc = ""; depth++; continue }
        if (c == "}") { depth--; if (depth == 0) acc = ""; continue }
        if (depth > 0) continue
        if (c == ";") { statement(acc, FILENAME); acc = ""; continue }
        acc = acc c
    }
    acc = acc " "
}
END {
    if (list) {
        for (i = 1; i <= n; i++) print order[i]
        exit 0
    }
    bad = 0
    for (i = 1; i <= n; i++)
        if (!(order[i] in wrapped)) { print where[order[i]] ": " order[i]; bad++ }
    printf "%d public functions, %d without a call-site wrapper\n", n, bad > "/dev/stderr"
    exit bad > 0
}
