# ctest driver: builds and runs the consumer project against zcoll.
#   cmake -DMODE=find_package|add_subdirectory -DZCOLL_SOURCE_DIR=... -DZCOLL_BUILD_DIR=... -DWORK_DIR=... -P run_consumer.cmake
set(consumer_source "${CMAKE_CURRENT_LIST_DIR}/consumer")
file(REMOVE_RECURSE "${WORK_DIR}")
set(configure_args -S "${consumer_source}" -B "${WORK_DIR}/build" -G Ninja -DZCOLL_CONSUMER_MODE=${MODE})
if(MODE STREQUAL "find_package")
  execute_process(COMMAND "${CMAKE_COMMAND}" --install "${ZCOLL_BUILD_DIR}" --prefix "${WORK_DIR}/prefix"
                  COMMAND_ERROR_IS_FATAL ANY)
  list(APPEND configure_args "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix")
else()
  list(APPEND configure_args "-DZCOLL_SOURCE_DIR=${ZCOLL_SOURCE_DIR}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" ${configure_args} COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK_DIR}/build" COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${WORK_DIR}/build/consumer" COMMAND_ERROR_IS_FATAL ANY)
