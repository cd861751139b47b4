#pragma once
/// zcoll with MPI: everything <zcoll/zcoll.hpp> has, and transport::Mpi (link zcoll::mpi).
///
///     MPI_Init(&argc, &argv);
///     zcoll::transport::Mpi world{MPI_COMM_WORLD};   // a duplicate of it: the program's tags stay its own
///     zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{world, zcoll::FZLight{{.error_bound = zcoll::relative(1e-4)}}};

#include "zcoll/transport/mpi.hpp"
#include "zcoll/zcoll.hpp"
