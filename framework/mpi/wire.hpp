// mpi/ the messages of a batch over ranks (mpi/ranks.cpp), point to point on the batch's own
// communicator. The bodies use the encoding of the isolated workers' messages (batch/protocol.hpp):
// native numbers (every rank runs the same executable), strings as a length and their bytes.
//
//   rank r -> rank 0   request  "give me an image"                     answer: reply
//                      result   an image it finished: index, ImageResult
//                      line     a line of output (a note, an image's error, an operator's log)
//                      done     its images are finished: its RankSummary, its --trace text
//   rank 0 -> rank r   reply    the index of its next image, or -1: none left
//
// A rank sends its result and line messages before its done, from under one lock, so rank 0 (whose
// server receives from any rank and any tag, in order per rank) has every result of a rank when
// its done arrives.
#pragma once

#include "batch/batch.hpp"

#include <mpi.h>

#include <cstdint>
#include <string>

namespace pixflow::mpi {

enum Tag : int { tag_request = 1, tag_reply, tag_result, tag_line, tag_done };

/// Sends `body` (any size) and waits for the send to complete, gently.
void send_bytes(MPI_Comm comm, int dest, int tag, const std::string& body);
/// Receives one message from `src` with `tag`, gently; its body.
std::string receive_bytes(MPI_Comm comm, int src, int tag);
/// A message from any rank with any tag, if one has arrived (never blocks).
bool try_receive(MPI_Comm comm, int& src, int& tag, std::string& body);

std::string encode_result(std::size_t index, const host::ImageResult& r);
/// Throws InternalError on a malformed body.
host::ImageResult decode_result(const std::string& body, std::size_t& index);

std::string encode_done(const host::RankSummary& s, const std::string& trace);
host::RankSummary decode_done(const std::string& body, std::string& trace);

std::string encode_index(std::int64_t i);
std::int64_t decode_index(const std::string& body);

} // namespace pixflow::mpi
