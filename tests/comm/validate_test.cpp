// ProcessGroup::submit's argument checks (validate), one test per refusal: each is an
// InvalidArgument naming rank, op, group and backend, and nothing reaches the backend.
#include <gtest/gtest.h>

#include <functional>

#include "comm/process_group.h"
#include "core/error.h"

namespace collie {
namespace {

// Rank 1 of a group of 4 ("3", 'tp') whose capability table the test narrows; records the calls
// that get through.
class Checked final : public ProcessGroup {
 public:
  Checked() : ProcessGroup(group()) {
    caps_.backend = "vtest";
    for (auto& o : caps_.ops) o = OpCapability{true, true, kAllDTypeBits, kAllReduceOpBits};
  }
  const Capabilities& capabilities() const override { return caps_; }
  OpCapability& cap(OpType t) { return caps_.at(t); }
  std::vector<OpCall> runs;

 protected:
  std::shared_ptr<Work> run(const OpCall& call) override {
    runs.push_back(call);
    auto w = std::make_shared<Work>(call.type, call.seq, call.timeout);
    w->complete();
    return w;
  }

 private:
  static GroupInfo group() {
    GroupInfo g;
    g.backend = "vtest";
    g.name = "3";
    g.desc = "tp";
    g.rank = 1;
    g.size = 4;
    return g;
  }
  Capabilities caps_;
};

// The message of the InvalidArgument `op` throws; fails the test if it throws none or the op ran.
std::string refusal(Checked& pg, const std::function<void()>& op) {
  const size_t before = pg.runs.size();
  try {
    op();
    ADD_FAILURE() << "the call was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(pg.runs.size(), before) << "a refused call reached the backend";
    return e.what();
  }
  return {};
}

#define EXPECT_REFUSED(pg, op, key)                                                            \
  do {                                                                                         \
    const std::string what_ = refusal(pg, [&] { op; });                                        \
    EXPECT_NE(what_.find(key), std::string::npos) << "want: " << (key) << "\ngot:  " << what_; \
  } while (0)

template <typename O>
O at_root(int root) {
  O o;
  o.root = root;
  return o;
}

float buf[64];
float out_buf[64];
int32_t ints[64];

TensorView f32(size_t n) { return TensorView::cpu(buf, n, DType::Float32); }
TensorView out(size_t n) { return TensorView::cpu(out_buf, n, DType::Float32); }

TEST(Validate, TheMessageNamesRankOpGroupAndBackendAndTheRefusalTakesNoSeq) {
  Checked pg;
  EXPECT_EQ(refusal(pg, [&] { pg.broadcast(f32(4), at_root<BroadcastOptions>(4)); }),
            "[Rank 1] broadcast (group 3 'tp', vtest): root 4 is outside the group of 4 ranks");
  EXPECT_EQ(pg.last_collective_seq(), 0u);
  pg.broadcast(f32(4), at_root<BroadcastOptions>(3));
  EXPECT_EQ(pg.last_collective_seq(), 1u);
}

TEST(Validate, ARootOutsideTheGroupIsRefusedForEveryRootedOp) {
  Checked pg;
  EXPECT_REFUSED(pg, pg.broadcast(f32(4), at_root<BroadcastOptions>(-1)),
                 "broadcast (group 3 'tp', vtest): root -1 is outside the group of 4 ranks");
  EXPECT_REFUSED(pg, pg.reduce(f32(4), at_root<ReduceOptions>(4)),
                 "reduce (group 3 'tp', vtest): root 4 is outside");
  EXPECT_REFUSED(pg, pg.gather(f32(2), out(8), at_root<GatherOptions>(7)),
                 "gather (group 3 'tp', vtest): root 7 is outside");
  EXPECT_REFUSED(pg, pg.scatter(f32(8), out(2), at_root<ScatterOptions>(-2)),
                 "scatter (group 3 'tp', vtest): root -2 is outside");
}

TEST(Validate, APeerOutsideTheGroupIsRefused) {
  Checked pg;
  EXPECT_REFUSED(pg, pg.send(f32(4), 4),
                 "send (group 3 'tp', vtest): peer 4 is outside the group of 4 ranks");
  EXPECT_REFUSED(pg, pg.recv(f32(4), -1), "recv (group 3 'tp', vtest): peer -1 is outside");
}

TEST(Validate, SendingToOrReceivingFromThisRankIsRefused) {
  Checked pg;
  EXPECT_REFUSED(pg, pg.send(f32(4), 1), "send (group 3 'tp', vtest): peer is this rank itself");
  EXPECT_REFUSED(pg, pg.recv(f32(4), 1), "recv (group 3 'tp', vtest): peer is this rank itself");
}

TEST(Validate, ANullBufferWithElementsIsRefused) {
  Checked pg;
  EXPECT_REFUSED(pg, pg.all_reduce(TensorView::cpu(nullptr, 4, DType::Float32)),
                 "all_reduce (group 3 'tp', vtest): input buffer is null");
  EXPECT_REFUSED(pg, pg.all_gather(f32(2), TensorView::cpu(nullptr, 8, DType::Float32)),
                 "all_gather (group 3 'tp', vtest): output buffer is null");
}

TEST(Validate, AShapeThatDoesNotMatchTheElementCountIsRefused) {
  Checked pg;
  TensorView in = f32(4);
  in.shape.ndim = 2;
  in.shape.dims[0] = 2;
  in.shape.dims[1] = 3;
  EXPECT_REFUSED(pg, pg.all_reduce(in), "input shape [2, 3] does not match its 4 elements");
  TensorView o = out(8);
  o.shape.ndim = 1;
  o.shape.dims[0] = 9;
  EXPECT_REFUSED(pg, pg.all_gather(f32(2), o), "output shape [9] does not match its 8 elements");
}

TEST(Validate, InputAndOutputOfDifferentDtypesAreRefused) {
  Checked pg;
  EXPECT_REFUSED(pg, pg.all_gather(f32(2), TensorView::cpu(ints, 8, DType::Int32)),
                 "all_gather (group 3 'tp', vtest): input dtype float32 differs from output "
                 "dtype int32");
}

TEST(Validate, InputAndOutputOnDifferentDevicesAreRefused) {
  Checked pg;
  TensorView o = out(8);
  o.device = Device{DeviceType::CUDA, 0};
  EXPECT_REFUSED(pg, pg.all_gather(f32(2), o), "input and output are on different devices");
}

TEST(Validate, AllGatherOutputMustBeSizeTimesInput) {
  Checked pg;
  EXPECT_REFUSED(pg, pg.all_gather(f32(2), out(7)),
                 "all_gather (group 3 'tp', vtest): output has 7 elements, expected size*input = "
                 "4*2");
}

TEST(Validate, GatherChecksTheOutputOnTheRootOnly) {
  Checked pg;
  EXPECT_REFUSED(pg, pg.gather(f32(2), out(7), at_root<GatherOptions>(1)),
                 "gather (group 3 'tp', vtest): root output has 7 elements, expected 4*2");
  EXPECT_NO_THROW(pg.gather(f32(2), TensorView{}, at_root<GatherOptions>(0)));
  EXPECT_EQ(pg.runs.size(), 1u);
}

TEST(Validate, ScatterChecksTheInputOnTheRootOnly) {
  Checked pg;
  EXPECT_REFUSED(pg, pg.scatter(f32(9), out(2), at_root<ScatterOptions>(1)),
                 "scatter (group 3 'tp', vtest): root input has 9 elements, expected 4*2");
  EXPECT_NO_THROW(pg.scatter(TensorView{}, out(2), at_root<ScatterOptions>(0)));
  EXPECT_EQ(pg.runs.size(), 1u);
}

TEST(Validate, ReduceScatterInputMustBeSizeTimesOutput) {
  Checked pg;
  EXPECT_REFUSED(pg, pg.reduce_scatter(f32(6), out(2)),
                 "reduce_scatter (group 3 'tp', vtest): input has 6 elements, expected "
                 "size*output = 4*2");
}

TEST(Validate, AllToAllWithoutSplitsNeedsEqualBuffersDivisibleByTheGroup) {
  Checked pg;
  EXPECT_REFUSED(pg, pg.all_to_all(f32(8), out(4)),
                 "all_to_all (group 3 'tp', vtest): input (8) and output (4) must be equal and "
                 "divisible by 4");
  EXPECT_REFUSED(pg, pg.all_to_all(f32(6), out(6)),
                 "input (6) and output (6) must be equal and divisible by 4");
}

AllToAllOptions splits(std::span<const int64_t> in, std::span<const int64_t> o) {
  AllToAllOptions opts;
  opts.input_splits = in;
  opts.output_splits = o;
  return opts;
}

TEST(Validate, AllToAllSplitsComeInPairs) {
  Checked pg;
  const int64_t four[] = {1, 1, 1, 1};
  EXPECT_REFUSED(pg, pg.all_to_all(f32(4), out(4), splits(four, {})),
                 "all_to_all (group 3 'tp', vtest): give both input_splits and output_splits, or "
                 "neither");
  EXPECT_REFUSED(pg, pg.all_to_all(f32(4), out(4), splits({}, four)),
                 "give both input_splits and output_splits, or neither");
}

TEST(Validate, AllToAllSplitsNeedOneCountPerRank) {
  Checked pg;
  const int64_t three[] = {2, 1, 1}, four[] = {1, 1, 1, 1};
  EXPECT_REFUSED(pg, pg.all_to_all(f32(4), out(4), splits(three, four)),
                 "input_splits has 3 entries for a group of 4");
  EXPECT_REFUSED(pg, pg.all_to_all(f32(4), out(4), splits(four, three)),
                 "output_splits has 3 entries for a group of 4");
}

TEST(Validate, AllToAllSplitsMustNotBeNegative) {
  Checked pg;
  const int64_t negative[] = {3, -1, 1, 1}, four[] = {1, 1, 1, 1};
  EXPECT_REFUSED(pg, pg.all_to_all(f32(4), out(4), splits(negative, four)),
                 "input_splits has a negative count");
}

TEST(Validate, AllToAllSplitsMustAddUpToTheirBuffer) {
  Checked pg;
  const int64_t four[] = {1, 1, 1, 1}, five[] = {1, 1, 1, 2}, six[] = {0, 2, 2, 2};
  EXPECT_REFUSED(pg, pg.all_to_all(f32(4), out(4), splits(four, five)),
                 "output_splits add up to 5 elements but the buffer has 4");
  // Uneven buffers are fine when the splits account for them.
  EXPECT_NO_THROW(pg.all_to_all(f32(4), out(6), splits(four, six)));
  EXPECT_EQ(pg.runs.size(), 1u);
}

TEST(Validate, AnOpTheBackendDoesNotDeclareOnTheDeviceIsRefused) {
  Checked pg;
  pg.cap(OpType::AllReduce).cpu = false;
  EXPECT_REFUSED(pg, pg.all_reduce(f32(4)),
                 "all_reduce (group 3 'tp', vtest): vtest backend does not support all_reduce on "
                 "cpu (see `collie info`)");
  pg.cap(OpType::Broadcast).cuda = false;
  TensorView gpu = f32(4);
  gpu.device = Device{DeviceType::CUDA, 0};
  EXPECT_REFUSED(pg, pg.broadcast(gpu), "vtest backend does not support broadcast on cuda");
}

TEST(Validate, ADtypeTheBackendDoesNotDeclareIsRefused) {
  Checked pg;
  pg.cap(OpType::AllGather).dtypes = kAllDTypeBits & ~bit(DType::Int32);
  EXPECT_REFUSED(pg,
                 pg.all_gather(TensorView::cpu(ints, 2, DType::Int32),
                               TensorView::cpu(ints + 8, 8, DType::Int32)),
                 "vtest backend does not support all_gather with dtype int32 on cpu");
}

TEST(Validate, AReduceOpTheBackendDoesNotDeclareIsRefused) {
  Checked pg;
  pg.cap(OpType::Reduce).reduce_ops = kAllReduceOpBits & ~bit(ReduceOp::Max);
  ReduceOptions o;
  o.op = ReduceOp::Max;
  EXPECT_REFUSED(pg, pg.reduce(f32(4), o),
                 "vtest backend does not support reduce with reduce op max on float32 cpu");
}

TEST(Validate, ABitwiseReduceOpOnAFloatingDtypeIsRefusedEvenWhenDeclared) {
  Checked pg;
  AllReduceOptions o;
  o.op = ReduceOp::BOr;
  EXPECT_REFUSED(pg, pg.all_reduce(f32(4), o),
                 "vtest backend does not support all_reduce with reduce op bor on float32 cpu");
  EXPECT_NO_THROW(pg.all_reduce(TensorView::cpu(ints, 4, DType::Int32), o));
  EXPECT_EQ(pg.runs.size(), 1u);
}

// submit asks supports(call) for every op and builds why_unsupported's message only when it is
// false: the two agree on every op, device, dtype and reduce op, with and without an input, over
// tables that drop each kind of entry.
TEST(Validate, SupportsAgreesWithWhyUnsupportedOnEveryCall) {
  std::vector<Capabilities> tables(4);
  for (size_t k = 0; k < tables.size(); ++k) {
    for (OpType t : kAllOpTypes) {
      OpCapability& c = tables[k].at(t);
      const int i = static_cast<int>(t);
      c = OpCapability{true, true, kAllDTypeBits, kAllReduceOpBits};
      if (k == 1) c.cpu = i % 2 == 0, c.cuda = i % 3 != 0;
      if (k == 2) c.dtypes &= ~(bit(DType::Int32) | bit(DType::Float16));
      if (k == 3) c.reduce_ops &= ~(bit(ReduceOp::Max) | bit(ReduceOp::BXor));
    }
  }
  int checked = 0, refused = 0;
  for (const Capabilities& caps : tables) {
    for (OpType t : kAllOpTypes) {
      for (DeviceType dev : {DeviceType::CPU, DeviceType::CUDA}) {
        for (DType d : kAllDTypes) {
          for (ReduceOp r : kAllReduceOps) {
            for (bool input : {true, false}) {
              OpCall c;
              c.type = t;
              c.reduce_op = r;
              TensorView v = TensorView::cpu(buf, 4, d);
              v.device = Device{dev, 0};
              (input ? c.input : c.output) = v;
              const std::string why = caps.why_unsupported(c);
              EXPECT_EQ(caps.supports(c), why.empty())
                  << op_name(t) << " " << device_type_name(dev) << " " << dtype_name(d) << " "
                  << reduce_op_name(r) << ": " << why;
              ++checked;
              refused += !why.empty();
            }
          }
        }
      }
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_LT(refused, checked);
}

// send, recv, broadcast, all_reduce and reduce run in place: submit makes the output the input,
// whatever output the call carried, and checks that.
TEST(Validate, InPlaceOpsUseTheirInputAsOutput) {
  Checked pg;
  for (OpType t :
       {OpType::Send, OpType::Recv, OpType::Broadcast, OpType::AllReduce, OpType::Reduce}) {
    OpCall c;
    c.type = t;
    c.input = f32(4);
    c.output = TensorView::cpu(ints, 9, DType::Int32);  // ignored
    c.root = 0;
    c.peer = 0;
    EXPECT_NO_THROW(pg.submit(c)) << op_name(t);
    ASSERT_FALSE(pg.runs.empty());
    EXPECT_EQ(pg.runs.back().output.data, static_cast<void*>(buf)) << op_name(t);
    EXPECT_EQ(pg.runs.back().output.numel, 4u) << op_name(t);
    EXPECT_EQ(pg.runs.back().output.dtype, DType::Float32) << op_name(t);
  }
  EXPECT_EQ(pg.runs.size(), 5u);
}

// Only a barrier is checked against the table without buffers; so is a non-root gather that
// sends nothing.
TEST(Validate, AnOpWithoutBuffersIsNotCheckedAgainstTheCapabilityTable) {
  Checked pg;
  pg.cap(OpType::AllReduce) = OpCapability{};
  pg.cap(OpType::Gather) = OpCapability{};
  EXPECT_NO_THROW(pg.all_reduce(TensorView{}));
  EXPECT_NO_THROW(pg.gather(TensorView{}, out(8), at_root<GatherOptions>(0)));
  EXPECT_EQ(pg.runs.size(), 2u);
  EXPECT_REFUSED(pg, pg.all_reduce(f32(1)), "vtest backend does not support all_reduce on cpu");
}

}  // namespace
}  // namespace collie
