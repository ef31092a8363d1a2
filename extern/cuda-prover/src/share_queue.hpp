// Owns: the items waiting on one device that may share a device pass
// (dispatch.hpp, dispatch_share): the queue in front of the device's
// mutexes and one waiting item's record. An item that may share waits
// here instead of on the mutexes; only the head of the queue goes on to
// take them. Once it holds them it leads a pass and may claim later items
// with the same key, from its own call or another caller's thread; a
// claimed item's thread waits until the leader marks it done.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>

namespace cp {

// What items must agree on to share one pass: the kind of work (so that
// the leader knows what the payload is), the key, the shape and the
// caller's mutex (a pass holds only its leader's).
struct share_key {
    const void *kind = nullptr;
    const void *key = nullptr;
    const void *shape = nullptr;
    const void *caller_mutex = nullptr;

    bool operator==(const share_key &o) const {
        return kind == o.kind && key == o.key && shape == o.shape &&
               caller_mutex == o.caller_mutex;
    }
};

// One waiting item. The fields below `tag` are written by the leader that
// claims it, under the queue's mutex.
struct share_member {
    share_key key;
    void *payload = nullptr;  // the work's own record of the item
    int64_t tag = -1;
    bool claimed = false;
    bool done = false;
    std::chrono::steady_clock::time_point started;  // when the pass began
    std::exception_ptr err;   // the item's failure (a copy the item may change)
};

struct share_queue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<share_member *> waiting;  // in arrival order
};

}  // namespace cp
