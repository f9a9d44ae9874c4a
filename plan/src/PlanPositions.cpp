// A plan's source positions beside its bytes (PlanPositions.h). The file is one MessagePack
// map: {"magic": "orch.positions", "plan": SHA-256 of the plan's bytes, "nodes": [line,
// column, ...], "operators": [line, column, ...]} and, from orchc, "source": SHA-256 of the
// source text the positions point into.
#include "orch/plan/PlanPositions.h"

#include "orch/plan/MessagePackReader.h"
#include "orch/plan/Sha256.h"

#include <msgpack.hpp>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace orch::plan {
namespace {

constexpr std::string_view kMagic = "orch.positions";
/// The largest source file whose text is compared with the positions' (a program is far
/// smaller; anything bigger is not the program the positions were written for).
constexpr size_t kLargestSource = size_t(16) << 20;

template <typename Items>
void packPairs(msgpack::packer<msgpack::sbuffer> &out, const Items &items) {
  out.pack_array(uint32_t(2 * items.size()));
  for (const auto &item : items) {
    out.pack(item.line);
    out.pack(item.column);
  }
}

/// The pairs of `array` into `items`' positions, if there are exactly as many.
template <typename Items> bool readPairs(const msgpack::object *array, Items &items) {
  if (!array || array->type != msgpack::type::ARRAY || array->via.array.size != 2 * items.size())
    return false;
  std::vector<uint32_t> numbers;
  for (uint32_t i = 0; i < array->via.array.size; ++i) {
    const msgpack::object &number = array->via.array.ptr[i];
    if (number.type != msgpack::type::POSITIVE_INTEGER || number.via.u64 > UINT32_MAX)
      return false;
    numbers.push_back(uint32_t(number.via.u64));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    items[i].line = numbers[2 * i];
    items[i].column = numbers[2 * i + 1];
  }
  return true;
}

/// `plan` with the positions `positions` holds for `planBytes`, and the hash of the source
/// text they were written for ("" when they do not say); nullopt when they do not fit.
std::optional<std::pair<Plan, std::string>> placed(const Plan &plan, std::string_view planBytes,
                                                   std::string_view positions) {
  try {
    const std::size_t most = positions.size();
    msgpack::unpack_limit limits(most, most, most, most, most, /*depth=*/4);
    std::size_t offset = 0;
    msgpack::object_handle handle =
        msgpack::unpack(positions.data(), positions.size(), offset, nullptr, nullptr, limits);
    const msgpack::object &root = handle.get();
    if (offset != positions.size() || root.type != msgpack::type::MAP)
      return std::nullopt;
    auto text = [&](std::string_view key) {
      const msgpack::object *value = findKey(root, key);
      return value && value->type == msgpack::type::STR
                 ? std::string_view(value->via.str.ptr, value->via.str.size)
                 : std::string_view();
    };
    if (text("magic") != kMagic || text("plan") != sha256Hex(planBytes))
      return std::nullopt;
    Plan result = plan;
    if (!readPairs(findKey(root, "nodes"), result.nodes) ||
        !readPairs(findKey(root, "operators"), result.operators))
      return std::nullopt;
    return std::make_pair(std::move(result), std::string(text("source")));
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

/// The bytes of the regular file at `path` when it has at most `most` of them; nullopt for
/// anything else (missing, a directory, a FIFO or a device, too big), without blocking.
std::optional<std::string> readRegularFile(const std::string &path, size_t most) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  struct stat info {};
  std::optional<std::string> bytes;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && uint64_t(info.st_size) <= most) {
    std::string content(size_t(info.st_size), '\0');
    size_t got = 0;
    while (got < content.size()) {
      const ssize_t n = ::read(fd, content.data() + got, content.size() - got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got += size_t(n);
    }
    if (got == content.size())
      bytes = std::move(content);
  }
  ::close(fd);
  return bytes;
}

/// The positions beside `planPath`, or beside the file a link there points to.
std::optional<std::string> readPositionsBeside(const std::string &planPath, size_t most) {
  if (std::optional<std::string> positions = readRegularFile(positionsPathFor(planPath), most))
    return positions;
  char target[PATH_MAX];
  if (!::realpath(planPath.c_str(), target) || planPath == target)
    return std::nullopt;
  return readRegularFile(positionsPathFor(target), most);
}

} // namespace

std::string positionsPathFor(const std::string &planPath) { return planPath + ".positions"; }

std::string encodePlanPositions(const Plan &plan, std::string_view planBytes,
                                std::string_view sourceText) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> out(buffer);
  out.pack_map(sourceText.empty() ? 4 : 5);
  out.pack(std::string_view("magic"));
  out.pack(kMagic);
  out.pack(std::string_view("plan"));
  out.pack(sha256Hex(planBytes));
  out.pack(std::string_view("nodes"));
  packPairs(out, plan.nodes);
  out.pack(std::string_view("operators"));
  packPairs(out, plan.operators);
  if (!sourceText.empty()) {
    out.pack(std::string_view("source"));
    out.pack(sha256Hex(sourceText));
  }
  return std::string(buffer.data(), buffer.size());
}

bool applyPlanPositions(Plan &plan, std::string_view planBytes, std::string_view positions) {
  std::optional<std::pair<Plan, std::string>> result = placed(plan, planBytes, positions);
  if (!result)
    return false;
  plan = std::move(result->first);
  return true;
}

bool loadPlanPositions(Plan &plan, const std::string &planPath, std::string_view planBytes) {
  // Two numbers of at most 5 bytes per node and declared operator, and the map around them.
  const size_t most = 512 + 10 * (plan.nodes.size() + plan.operators.size());
  std::optional<std::string> positions = readPositionsBeside(planPath, most);
  if (!positions)
    return false;
  std::optional<std::pair<Plan, std::string>> result = placed(plan, planBytes, *positions);
  if (!result)
    return false;
  // Positions into a text that has changed since (`orchc fmt`) point at the wrong places.
  if (!result->second.empty() && !plan.sourcePath.empty())
    if (std::optional<std::string> source = readRegularFile(plan.sourcePath, kLargestSource);
        source && sha256Hex(*source) != result->second)
      return false;
  plan = std::move(result->first);
  return true;
}

std::string sourceLocation(const Plan &plan, uint32_t line, uint32_t column) {
  std::string where = plan.sourcePath.empty() ? std::string("<plan>") : plan.sourcePath;
  if (line > 0)
    where += ":" + std::to_string(line) + ":" + std::to_string(column);
  return where;
}

} // namespace orch::plan
