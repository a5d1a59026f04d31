#include "transport/tcp/tcp_options.h"

#include "transport/knob_values.h"

namespace megascale::transport {

namespace {

const config::KnobRegistration kTcpKnobs{
      {"MEGASCALE_TCP_SOCKETS", config::Type::kInt, "2", "sockets", "transport", "TCP sockets per connection (a communicator opens the first at connect, the others at the first large message)"},
      {"MEGASCALE_TCP_STRIPE_MIN", config::Type::kInt, "262144", "bytes",
       "transport", "messages at least this large are striped over all sockets of a connection"}};

}  // namespace

TcpOptions tcpOptionsFromConfig() {
  TcpOptions o;
  o.sockets_per_comm = static_cast<int>(knobInRange("MEGASCALE_TCP_SOCKETS", 1, 64));
  o.stripe_min_bytes = static_cast<size_t>(knobInRange("MEGASCALE_TCP_STRIPE_MIN", 0, int64_t{1} << 40));
  return o;
}

}  // namespace megascale::transport
