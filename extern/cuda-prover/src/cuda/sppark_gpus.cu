// sppark's device registry (select_gpu, all_gpus, gpu_props), compiled into
// the backend so that linking does not depend on the sppark crate's own
// static library being pulled in.
#include <util/all_gpus.cpp>
