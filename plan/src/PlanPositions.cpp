// A plan's source positions beside its bytes (PlanPositions.h). The file is one MessagePack
// map: {"magic": "orch.positions", "plan": SHA-256 of the plan's bytes, "nodes": [line,
// column, ...], "operators": [line, column, ...]}.
#include "orch/plan/PlanPositions.h"

#include "orch/plan/MessagePackReader.h"
#include "orch/plan/Sha256.h"

#include <msgpack.hpp>

#include <vector>

namespace orch::plan {
namespace {

constexpr std::string_view kMagic = "orch.positions";

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

} // namespace

std::string positionsPathFor(const std::string &planPath) { return planPath + ".positions"; }

std::string encodePlanPositions(const Plan &plan, std::string_view planBytes) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> out(buffer);
  out.pack_map(4);
  out.pack(std::string_view("magic"));
  out.pack(kMagic);
  out.pack(std::string_view("plan"));
  out.pack(sha256Hex(planBytes));
  out.pack(std::string_view("nodes"));
  packPairs(out, plan.nodes);
  out.pack(std::string_view("operators"));
  packPairs(out, plan.operators);
  return std::string(buffer.data(), buffer.size());
}

bool applyPlanPositions(Plan &plan, std::string_view planBytes, std::string_view positions) {
  try {
    const std::size_t most = positions.size();
    msgpack::unpack_limit limits(most, most, most, most, most, /*depth=*/4);
    std::size_t offset = 0;
    msgpack::object_handle handle =
        msgpack::unpack(positions.data(), positions.size(), offset, nullptr, nullptr, limits);
    const msgpack::object &root = handle.get();
    if (offset != positions.size() || root.type != msgpack::type::MAP)
      return false;
    auto text = [&](std::string_view key) {
      const msgpack::object *value = findKey(root, key);
      return value && value->type == msgpack::type::STR
                 ? std::string_view(value->via.str.ptr, value->via.str.size)
                 : std::string_view();
    };
    if (text("magic") != kMagic || text("plan") != sha256Hex(planBytes))
      return false;
    Plan placed = plan;
    if (!readPairs(findKey(root, "nodes"), placed.nodes) ||
        !readPairs(findKey(root, "operators"), placed.operators))
      return false;
    plan = std::move(placed);
    return true;
  } catch (const std::exception &) {
    return false;
  }
}

std::string sourceLocation(const Plan &plan, uint32_t line, uint32_t column) {
  std::string where = plan.sourcePath.empty() ? std::string("<plan>") : plan.sourcePath;
  if (line > 0)
    where += ":" + std::to_string(line) + ":" + std::to_string(column);
  return where;
}

} // namespace orch::plan
