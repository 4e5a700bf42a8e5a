# The Credentials file's unit tests. Included from tests/CMakeLists.txt, after
# pkg_check_modules(CHECK REQUIRED IMPORTED_TARGET check). tbcore must list
# src/credentials.c and src/credentials_cmd.c.
add_executable(test_credentials ${CMAKE_CURRENT_LIST_DIR}/test_credentials.c)
target_link_libraries(test_credentials PRIVATE tbcore PkgConfig::CHECK)
add_test(NAME credentials COMMAND test_credentials)
