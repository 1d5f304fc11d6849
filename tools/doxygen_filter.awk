# Doxygen's INPUT_FILTER for the public headers: reads the plain /* */ comments as
# the documentation they are, so the headers need no doxygen markup.
#
#   awk -f tools/doxygen_filter.awk include/ctorch/reduce.h
#
# The headers' conventions, as doxygen is told them (line numbers are kept, so that
# doxygen's warnings point at the header's own lines):
# - the comment that opens a header documents the file; "ctorch/x.h — " is dropped
#   from its first sentence, the brief;
# - a comment that ends right above a declaration (no blank line between) documents
#   it, and every function declared below it up to the next blank line, comment or
#   #define (those get @copydoc of the first); a comment followed by a blank line is
#   a plain comment (section rules, notes about what follows);
# - a comment after code on the same line documents that line's declaration (or
#   struct field, or enum value);
# - code in a comment (lines indented four spaces after " * ", the examples that
#   tests/doc_examples compiles) becomes a code block;
# - a call-site wrapper (#define ct_f(a) CT_AT(ct_f(a)), see base.h) is hidden: the
#   function of the same name carries the documentation; any other undocumented
#   ct_ macro is said to call the function it expands to, with its options struct.

function code_line(s) { return s ~ /^ \*     / }
function blank(s) { return s ~ /^[ \t]*$/ }
function comment_start(s) { return s ~ /^[ \t]*\/\*/ }
# The first function a top-level declaration declares (the name before its "(").
function declared(s,    m) {
    if (s ~ /^[ \t#}]/ || s ~ /^(typedef|extern|struct)/ || s !~ /^[A-Za-z_]/) return ""
    if (!match(s, /[A-Za-z_][A-Za-z_0-9]*[ \t]*\(/)) return ""
    m = substr(s, RSTART, RLENGTH); sub(/[ \t]*\($/, "", m)
    return m
}

{ L[NR] = $0 }

END {
    n = NR
    name = FILENAME; sub(/.*\//, "", name)
    head = 1                                  # the next comment is the file's
    for (i = 1; i <= n; i++) {
        s = L[i]
        if (s ~ /^#[ \t]*define[ \t]/) { i = macro(i) - 1; head = 0; continue }
        if (s ~ /^\/\*\* @copydoc /) continue     # a declaration of a group, done
        if (comment_start(s)) {
            j = i; while (j < n && index(j == i ? substr(L[j], index(L[j], "/*") + 2) : L[j], "*/") == 0) j++
            if (head) {
                sub(/\/\*[ \t]*/, "/** @file " name " ", L[i])
                sub(/@file [^ ]+ ctorch[^ ]* — /, "&@@", L[i]); sub(/ctorch[^ ]* — @@/, "", L[i])
                head = 0
            } else if (!blank(L[j + 1]) && !comment_start(L[j + 1]) && L[j + 1] !~ /^#[ \t]*(if|endif|else|include)/) {
                sub(/\/\*/, "/**", L[i])
                group(j + 1)
            } else if (has_code(i, j)) {
                sub(/\/\*[ \t]*/, "/** @file " name " ", L[i])
            }
            codeblocks(i, j)
            i = j
            continue
        }
        head = head && blank(s)
        # A trailing comment documents what precedes it on its line.
        if (s ~ /[^ \t].*\/\*/ && s !~ /\/\*\*/) {
            sub(/\/\*/, "/**<", L[i])
            j = i; while (j < n && index(substr(L[j], j == i ? index(L[j], "/**<") + 4 : 1), "*/") == 0) j++
            codeblocks(i, j)
            i = j
        }
    }
    for (i = 1; i <= n; i++) print L[i]
}

# The entity a doc comment ending above line k documents (a function, or a typedef
# up to its "} name;"), and each function declared below it up to a blank line, a
# comment or a preprocessor line, which get its documentation too.
function group(k,    first, depth, t) {
    first = declared(L[k])
    if (first != "") first = first "()"
    else if (match(L[k], /^typedef[^{]*\(\*[ \t]*[A-Za-z_][A-Za-z_0-9]*\)/)) {  # a function type
        first = substr(L[k], RSTART, RLENGTH); sub(/\)$/, "", first); sub(/.*\(\*[ \t]*/, "", first)
    } else if (L[k] ~ /^typedef[ \t]+(struct|enum|union)[^{]*;/) {   # typedef struct x x;
        first = L[k]; sub(/[ \t]*;.*/, "", first); sub(/.*[ \t*]/, "", first)
    } else if (L[k] ~ /^typedef[ \t]+(struct|enum|union)/) {
        for (depth = 0; k <= n; k++) {
            t = L[k]; depth += gsub(/{/, "{", t) - gsub(/}/, "}", t)
            if (depth <= 0 && L[k] ~ /}/) break
        }
        if (!match(L[k], /}[ \t]*[A-Za-z_][A-Za-z_0-9]*[ \t]*;/)) return
        first = substr(L[k], RSTART + 1, RLENGTH - 2); gsub(/[ \t]/, "", first)
    } else return
    for (k++; k <= n && !blank(L[k]) && !comment_start(L[k]); k++) {
        if (L[k] ~ /^#/) {
            if (!wrapper(k)) break
            while (L[k] ~ /\\[ \t]*$/ && k < n) k++
        } else if (declared(L[k]) != "" && index(L[k], "/*") == 0)
            L[k] = "/** @copydoc " first " */ " L[k]
    }
}

# Whether line k starts a call-site wrapper: #define ct_f(...) CT_AT(ct_f(...)).
function wrapper(k,    j, text, mname) {
    if (L[k] !~ /^#[ \t]*define[ \t]/) return 0
    j = k; text = L[k]
    while (L[j] ~ /\\[ \t]*$/ && j < n) text = text " " L[++j]
    mname = text; sub(/^#[ \t]*define[ \t]+/, "", mname); sub(/[^A-Za-z_0-9].*/, "", mname)
    return text ~ ("CT_AT\\([ \t]*" mname "[ \t]*\\(")
}

function has_code(i, j,    k) {
    for (k = i; k <= j; k++) if (code_line(L[k])) return 1
    return 0
}

# Lines i..j are one comment: its example lines become one code block each run, and
# in its prose "<name>" (a placeholder, as in ct_nn_<class>) is text, not an HTML tag.
function codeblocks(i, j,    k) {
    for (k = i; k <= j; k++) if (!code_line(L[k])) gsub(/<[A-Za-z]/, "\\\\&", L[k])
    for (k = i + 1; k <= j; k++) {
        if (code_line(L[k]) && !code_line(L[k - 1])) L[k - 1] = L[k - 1] " @code{.c}"
        if (!code_line(L[k]) && code_line(L[k - 1]))
            if (L[k] ~ /^ \*\//) sub(/^ /, " * @endcode ", L[k]); else sub(/^ \*/, " * @endcode", L[k])
    }
    if (code_line(L[j])) {
        if (!sub(/\*\/[ \t]*$/, "@endcode */", L[j])) L[j] = L[j] " @endcode"
    }
}

# The #define starting at line i (with its continuation lines); returns the line after.
function macro(i,    j, k, text, body, mname, called, opts, doc, documented) {
    j = i; text = L[i]
    while (L[j] ~ /\\[ \t]*$/ && j < n) { j++; text = text " " L[j] }
    mname = text; sub(/^#[ \t]*define[ \t]+/, "", mname); sub(/[^A-Za-z_0-9].*/, "", mname)
    if (wrapper(i)) {
        for (k = i; k <= j; k++) L[k] = ""
        return j + 1
    }
    if (index(L[j], "/*") && !index(L[j], "/**")) { sub(/\/\*/, "/**<", L[j]); return j + 1 }
    documented = i > 1 && L[i - 1] ~ /\*\/[ \t]*$/ && index(L[i - 1], "/**<") == 0
    body = text; sub(/^#[ \t]*define[ \t]+[A-Za-z_0-9]+(\([^)]*\))?/, "", body)
    if (mname ~ /^ct_/ && !documented && match(body, /ct_[a-z0-9_]+[ \t]*\(/)) {
        called = substr(body, RSTART, RLENGTH); sub(/[ \t]*\($/, "", called)
        opts = ""
        if (match(text, /CT_(OPTIONS|ARG_OPTS_|DEFAULTS)\([ \t]*ct_[a-z0-9_]+/)) {
            opts = substr(text, RSTART, RLENGTH); sub(/.*\([ \t]*/, "", opts)
        }
        doc = "/**< Calls " called "()"
        if (opts != "") doc = doc ", its trailing arguments being " opts " fields as designated initializers (`.name = value`; the others keep their defaults)"
        L[j] = L[j] " " doc ". */"
    }
    return j + 1
}
