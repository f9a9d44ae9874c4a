// A vector indexed by one kind of typed id (EngineTypes.h's Id): `entities[entity]` compiles,
// `entities[node]` and `entities[3]` do not. Private to the lineage engine.
#pragma once

#include "orch/runtime/engine/EngineTypes.h"

#include <ranges>
#include <vector>

namespace orch::runtime {

template <typename IdT, typename T> class IdVector : private std::vector<T> {
  using Base = std::vector<T>;

public:
  using Base::assign;
  using Base::back;
  using Base::Base;
  using Base::begin;
  using Base::capacity;
  using Base::clear;
  using Base::emplace_back;
  using Base::empty;
  using Base::end;
  using Base::push_back;
  using Base::reserve;
  using Base::resize;
  using Base::size;

  T &operator[](IdT id) { return Base::operator[](id.index); }
  const T &operator[](IdT id) const { return Base::operator[](id.index); }
  /// Every id of the vector, in order: `for (DomainId d : domains.ids())`.
  auto ids() const {
    return std::views::iota(uint32_t{0}, static_cast<uint32_t>(size())) |
           std::views::transform([](uint32_t index) { return IdT(index); });
  }
};

} // namespace orch::runtime
