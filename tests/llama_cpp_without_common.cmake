# Read by llama-cpp-python's build at the end of llama.cpp's project() call (the Makefile's
# LLAMA_CPP_CMAKE_ARGS, as CMAKE_PROJECT_llama.cpp_INCLUDE). The tests' llama.cpp server loads
# libllama and ggml only; llama-cpp-python forces llama.cpp's common library on in the CMake
# cache, and this variable of llama.cpp's directory scope hides that, so neither the common
# library nor cpp-httplib is compiled. libllama and ggml come out the same, byte for byte.
set(LLAMA_BUILD_COMMON OFF)
