#include "topology/slurm_topology.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/hostlist.h"

namespace megascale::topology {
namespace {

struct SwitchLine {
  int line = 0;
  std::string name, nodes, switches, link_speed;
  bool has_nodes = false, has_switches = false;
};

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

[[noreturn]] void fail(const std::string& source, int line, const std::string& why) {
  throw std::invalid_argument(source + (line > 0 ? ":" + std::to_string(line) : "") + ": " + why);
}

// Logical lines (continuations joined, comments cut) with the number of the physical line they start on.
std::vector<std::pair<int, std::string>> logicalLines(std::string_view text) {
  std::vector<std::pair<int, std::string>> lines;
  std::string pending;
  int start = 0, number = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    std::string line(text.substr(pos, end - pos));
    pos = end + 1;
    ++number;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (pending.empty()) start = number;
    const bool continues = !line.empty() && line.back() == '\\';
    if (continues) line.pop_back();
    pending += line + " ";
    if (continues && pos <= text.size()) continue;
    if (pending.find_first_not_of(" \t\r") != std::string::npos) lines.emplace_back(start, pending);
    pending.clear();
  }
  return lines;
}

SwitchLine parseLine(const std::string& source, int number, const std::string& text) {
  SwitchLine s;
  s.line = number;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos || eq == 0) fail(source, number, "expected Key=Value, got '" + word + "'");
    const std::string key = lower(word.substr(0, eq)), value = word.substr(eq + 1);
    if (key == "switchname") {
      s.name = value;
    } else if (key == "nodes") {
      s.nodes = value, s.has_nodes = true;
    } else if (key == "switches") {
      s.switches = value, s.has_switches = true;
    } else if (key == "linkspeed") {
      s.link_speed = value;
    } else {
      fail(source, number, "unknown key '" + word.substr(0, eq) + "' (SwitchName, Nodes, Switches, LinkSpeed)");
    }
  }
  if (s.name.empty()) fail(source, number, "a line without SwitchName=");
  if (s.has_nodes == s.has_switches) fail(source, number, "switch " + s.name + " needs exactly one of Nodes= and Switches=");
  return s;
}

int addHost(Cluster& cluster, const std::string& name) {
  if (int h = cluster.findHost(name); h >= 0) return h;
  cluster.hosts.push_back(Host{name, {}, {}, {}});
  return static_cast<int>(cluster.hosts.size()) - 1;
}

void linkSwitches(Cluster& cluster, const std::vector<SwitchLine>& lines, const std::string& source) {
  for (size_t s = 0; s < lines.size(); ++s) {
    if (!lines[s].has_switches) continue;
    for (const std::string& child_name : expandHostlist(lines[s].switches)) {
      const int child = cluster.findSwitch(child_name);
      if (child < 0) fail(source, lines[s].line, "switch " + lines[s].name + " lists '" + child_name + "', which is no switch");
      Switch& c = cluster.switches[static_cast<size_t>(child)];
      if (c.parent >= 0) {
        fail(source, lines[s].line, "switch " + child_name + " is under both " +
                                        cluster.switches[static_cast<size_t>(c.parent)].name + " and " + lines[s].name);
      }
      c.parent = static_cast<int>(s);
      cluster.switches[s].children.push_back(child);
    }
  }
  for (size_t s = 0; s < cluster.switches.size(); ++s) {  // a parent chain longer than the switch count loops
    size_t steps = 0;
    for (int p = cluster.switches[s].parent; p >= 0; p = cluster.switches[static_cast<size_t>(p)].parent) {
      if (++steps > cluster.switches.size()) fail(source, lines[s].line, "switch " + lines[s].name + " is in a cycle");
    }
  }
}

void attachHosts(Cluster& cluster, const std::vector<SwitchLine>& lines, const std::string& source) {
  for (size_t s = 0; s < lines.size(); ++s) {
    if (!lines[s].has_nodes) continue;
    Switch& sw = cluster.switches[s];
    for (const std::string& host_name : expandHostlist(lines[s].nodes)) {
      const int h = addHost(cluster, host_name);
      if (std::find(sw.hosts.begin(), sw.hosts.end(), h) != sw.hosts.end()) {
        fail(source, lines[s].line, "switch " + sw.name + " lists host " + host_name + " twice");
      }
      sw.hosts.push_back(h);
      auto& leaves = cluster.hosts[static_cast<size_t>(h)].leaf_switches;
      const int rail = static_cast<int>(leaves.size());
      if (sw.rail >= 0 && sw.rail != rail) {
        fail(source, lines[s].line, "leaf switch " + sw.name + " is rail " + std::to_string(sw.rail) + " of host " +
                                        cluster.hosts[static_cast<size_t>(sw.hosts.front())].name + " but rail " +
                                        std::to_string(rail) + " of host " + host_name +
                                        " (list every host's leaf switches in rail order)");
      }
      sw.rail = rail;
      leaves.push_back(static_cast<int>(s));
    }
  }
}

}  // namespace

Cluster parseSlurmTopology(std::string_view text, const std::string& source) {
  std::vector<SwitchLine> lines;
  Cluster cluster;
  for (const auto& [number, line] : logicalLines(text)) {
    SwitchLine parsed = parseLine(source, number, line);
    if (cluster.findSwitch(parsed.name) >= 0) fail(source, number, "switch " + parsed.name + " is defined twice");
    Switch sw;
    sw.name = parsed.name;
    sw.link_speed = parsed.link_speed;
    cluster.switches.push_back(std::move(sw));
    lines.push_back(std::move(parsed));
  }
  try {
    linkSwitches(cluster, lines, source);
    attachHosts(cluster, lines, source);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    if (what.rfind(source, 0) == 0) throw;
    fail(source, 0, what);  // a hostlist error, which names its expression
  }
  return cluster;
}

Cluster loadSlurmTopology(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the topology file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return parseSlurmTopology(text.str(), path);
}

std::string toSlurmTopology(const Cluster& cluster) {
  std::ostringstream out;
  for (const Switch& sw : cluster.switches) {
    out << "SwitchName=" << sw.name;
    if (!sw.children.empty()) {
      out << " Switches=";
      for (size_t i = 0; i < sw.children.size(); ++i) {
        out << (i ? "," : "") << cluster.switches[static_cast<size_t>(sw.children[i])].name;
      }
    } else {
      out << " Nodes=";
      for (size_t i = 0; i < sw.hosts.size(); ++i) out << (i ? "," : "") << cluster.hosts[static_cast<size_t>(sw.hosts[i])].name;
    }
    if (!sw.link_speed.empty()) out << " LinkSpeed=" << sw.link_speed;
    out << "\n";
  }
  return out.str();
}

}  // namespace megascale::topology
