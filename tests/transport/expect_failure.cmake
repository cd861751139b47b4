# Runs COMMAND (a list) and passes only if it exits with EXPECT_STATUS (non-zero) and its output matches
# EXPECT (when given): the test of a failure, where WILL_FAIL alone would also pass on a launcher that
# never started the program.
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
message("${output}")
if(NOT result STREQUAL "${EXPECT_STATUS}")
  message(FATAL_ERROR "expected exit status ${EXPECT_STATUS}, got ${result}")
endif()
if(NOT EXPECT STREQUAL "" AND NOT output MATCHES "${EXPECT}")
  message(FATAL_ERROR "exit status ${result}, but the output does not match \"${EXPECT}\"")
endif()
message("exit status ${result} and the expected output: the job failed as it should")
