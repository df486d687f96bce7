# Turn the compiled tc-eBPF object into a C array (cmake -P, with IN, OUT and
# NAME set), so jctlab carries its kernel program and loads it from memory
# (libbpf's bpf_object__open_mem) without a file to find at run time.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR size "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "/* Generated from ${IN} by embed.cmake: do not edit. */\n"
  "#include <stddef.h>\n"
  "const unsigned char ${NAME}[] = {${bytes}};\n"
  "const size_t ${NAME}_len = ${size};\n")
