// megascale_torch._C: the process group class, for megascale_torch/__init__.py to register as the backend.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "pytorch/process_group.h"

namespace py = pybind11;
using megascale::pytorch::ProcessGroupMegascale;

PYBIND11_MODULE(_C, m) {
  m.doc() = "megascale collectives as a torch.distributed backend";
  py::module::import("torch.distributed");  // registers c10d::ProcessGroup and Store with pybind11 first
  py::class_<ProcessGroupMegascale, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupMegascale>>(
      m, "ProcessGroupMegascale")
      .def(py::init(
               [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout) {
                 return c10::make_intrusive<ProcessGroupMegascale>(store, rank, size, timeout);
               }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::call_guard<py::gil_scoped_release>())
      .def("description", &ProcessGroupMegascale::description);
}
