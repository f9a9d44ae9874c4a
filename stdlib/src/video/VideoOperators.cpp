// video.clips (File -> List<Clip>), video.frames (Clip -> List<Frame>) and video.decode
// (Frame -> Image) with FFmpeg's libraries. Clips and frames are {index, start, end, path}
// and {index, time, path}; decoding seeks to the frame's time, so any worker can decode any
// frame. Each decode instance keeps the last video open: batches hold neighbouring frames.
#include "OperatorGroups.h"
#include "ValueFields.h"
#include "image/ImageValue.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <tuple>

namespace orch::stdlib {
namespace {

using runtime::OperatorConfig;
using runtime::OperatorRow;
using runtime::RowResult;
using runtime::Value;

/// An opened video: demuxer, its best video stream and a decoder for it.
class VideoFile {
public:
  ~VideoFile() { close(); }

  bool open(const std::string &path, std::string &problem) {
    close();
    if (avformat_open_input(&format_, path.c_str(), nullptr, nullptr) < 0) {
      problem = "cannot open video \"" + path + "\"";
      return false;
    }
    if (avformat_find_stream_info(format_, nullptr) < 0) {
      problem = "cannot read video \"" + path + "\" (corrupt?)";
      return false;
    }
    const AVCodec *codec = nullptr;
    stream_ = av_find_best_stream(format_, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (stream_ < 0 || !codec) {
      problem = "\"" + path + "\" has no decodable video stream";
      return false;
    }
    decoder_ = avcodec_alloc_context3(codec);
    if (!decoder_ ||
        avcodec_parameters_to_context(decoder_, format_->streams[stream_]->codecpar) < 0 ||
        avcodec_open2(decoder_, codec, nullptr) < 0) {
      problem = "cannot decode \"" + path + "\"";
      return false;
    }
    path_ = path;
    return true;
  }

  const std::string &path() const { return path_; }

  /// Seconds, from the container or the stream.
  double duration() const {
    if (format_->duration > 0)
      return double(format_->duration) / AV_TIME_BASE;
    const AVStream *stream = format_->streams[stream_];
    return stream->duration > 0 ? double(stream->duration) * av_q2d(stream->time_base) : 0;
  }

  /// The first frame at or after `seconds` (or the last one), as RGB. Requests in increasing
  /// time decode forward from where the last one stopped, seeking only when the target's
  /// keyframe lies beyond that point (or the target is behind it): a clip's frames, asked for
  /// in order, cost one seek and one pass, as `ffmpeg -ss` does.
  std::optional<Value> frameAt(double seconds, std::string &problem) {
    AVStream *stream = format_->streams[stream_];
    const double timeBase = av_q2d(stream->time_base);
    if (last_ && lastSeconds_ + 1e-6 >= seconds && seconds >= requested_ - 1e-9) {
      // The frame decoded last is the first at or after this time too.
      requested_ = seconds;
      return pastTheEnd(seconds, problem) ? std::nullopt : last_;
    }
    const int64_t target = int64_t(seconds / timeBase);
    if (!canContinueTo(target, seconds)) {
      av_seek_frame(format_, stream_, target, AVSEEK_FLAG_BACKWARD);
      avcodec_flush_buffers(decoder_);
      last_.reset();
      draining_ = false;
      ++seeks_;
    }
    requested_ = seconds;
    for (;;) {
      int status = avcodec_receive_frame(decoder_, frame_.get());
      if (status == 0) {
        const int64_t pts = frame_->best_effort_timestamp;
        last_ = toImage(frame_.get());
        lastSeconds_ = pts == AV_NOPTS_VALUE ? seconds : double(pts) * timeBase;
        if (pts != AV_NOPTS_VALUE && lastSeconds_ + 1e-6 >= seconds)
          return last_;
        continue;
      }
      if (status == AVERROR_EOF || (status != AVERROR(EAGAIN)))
        break;
      if (draining_)
        break;
      if (av_read_frame(format_, packet_.get()) < 0) {
        // End of file: drain the decoder so the last frames come out.
        avcodec_send_packet(decoder_, nullptr);
        draining_ = true;
        continue;
      }
      if (packet_->stream_index == stream_)
        avcodec_send_packet(decoder_, packet_.get());
      av_packet_unref(packet_.get());
    }
    if (!last_) {
      char text[160];
      std::snprintf(text, sizeof text, "no frame decodes at %.3f s of \"%s\" (%.3f s long%s)",
                    seconds, path_.c_str(), duration(), seconds < duration() ? ": truncated?" : "");
      problem = text;
    }
    // At the end: the last frame answers every later time within a frame or two of it (a
    // video's last frame starts before its end); an earlier one needs a seek.
    endSeconds_ = lastSeconds_;
    lastSeconds_ = std::numeric_limits<double>::infinity();
    return pastTheEnd(seconds, problem) ? std::nullopt : last_;
  }

  /// Whether `seconds` lies beyond the last frame the file holds by more than two frames (a
  /// truncated file whose header promises more): no frame is there, and repeating the last one
  /// would be a wrong value.
  bool pastTheEnd(double seconds, std::string &problem) const {
    if (!std::isinf(lastSeconds_))
      return false;
    const AVRational rate = format_->streams[stream_]->avg_frame_rate;
    const double frame = rate.num > 0 && rate.den > 0 ? av_q2d(av_inv_q(rate)) : 0.1;
    if (seconds <= endSeconds_ + 2 * frame + 1e-3)
      return false;
    char text[160];
    std::snprintf(text, sizeof text,
                  "no frame at %.3f s: the frames of \"%s\" end at %.3f s of %.3f s: truncated?",
                  seconds, path_.c_str(), endSeconds_, duration());
    problem = text;
    return true;
  }

  /// Seeks made so far (for tests: a clip's frames in order make one).
  uint64_t seeks() const { return seeks_; }

private:
  /// Whether decoding on from the last frame reaches `target` at least as soon as a seek would:
  /// the target lies ahead, and its keyframe (from the container's index) is not beyond where
  /// the decoder stands.
  bool canContinueTo(int64_t target, double seconds) const {
    if (!last_ || seconds < requested_ || draining_)
      return false;
    AVStream *stream = format_->streams[stream_];
    const int keyframe = av_index_search_timestamp(stream, target, AVSEEK_FLAG_BACKWARD);
    if (keyframe < 0)
      return false;
    const AVIndexEntry *entry = avformat_index_get_entry(stream, keyframe);
    return entry && double(entry->timestamp) * av_q2d(stream->time_base) <= lastSeconds_ + 1e-6;
  }

  Value toImage(const AVFrame *frame) {
    scaler_ = sws_getCachedContext(scaler_, frame->width, frame->height,
                                   AVPixelFormat(frame->format), frame->width, frame->height,
                                   AV_PIX_FMT_RGB24, SWS_BILINEAR, nullptr, nullptr, nullptr);
    std::string pixels(size_t(frame->width) * size_t(frame->height) * 3, '\0');
    uint8_t *planes[4] = {reinterpret_cast<uint8_t *>(pixels.data()), nullptr, nullptr, nullptr};
    int strides[4] = {frame->width * 3, 0, 0, 0};
    sws_scale(scaler_, frame->data, frame->linesize, 0, frame->height, planes, strides);
    return makeImage(frame->width, frame->height, 3, std::move(pixels));
  }

  void close() {
    if (scaler_)
      sws_freeContext(scaler_);
    scaler_ = nullptr;
    if (decoder_)
      avcodec_free_context(&decoder_);
    if (format_)
      avformat_close_input(&format_);
    path_.clear();
    last_.reset();
    lastSeconds_ = requested_ = endSeconds_ = 0;
    draining_ = false;
  }

  AVFormatContext *format_ = nullptr;
  AVCodecContext *decoder_ = nullptr;
  std::unique_ptr<AVPacket, void (*)(AVPacket *)> packet_{av_packet_alloc(),
                                                          [](AVPacket *p) { av_packet_free(&p); }};
  std::unique_ptr<AVFrame, void (*)(AVFrame *)> frame_{av_frame_alloc(),
                                                       [](AVFrame *f) { av_frame_free(&f); }};
  /// The frame decoded last, its time, and the time asked for last.
  std::optional<Value> last_;
  double lastSeconds_ = 0;
  double requested_ = 0;
  bool draining_ = false;
  uint64_t seeks_ = 0;
  /// Once the decoder reached the end: the time of the last frame there is.
  double endSeconds_ = 0;
  SwsContext *scaler_ = nullptr;
  int stream_ = -1;
  std::string path_;
};

class ClipsOperator : public runtime::Operator {
public:
  explicit ClipsOperator(const OperatorConfig &config) : seconds_(config.floatConstant("seconds")) {
    if (!(seconds_ > 0))
      throw runtime::OperatorError("video.clips: seconds must be positive");
  }
  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    for (const OperatorRow &row : rows) {
      const std::string *path = stringField(row.inputs[0], "path");
      std::string problem = "not a file: " + row.inputs[0].str().substr(0, 80);
      VideoFile video;
      if (!path || !video.open(*path, problem)) {
        results.push_back(RowResult::recordFailure(problem));
        continue;
      }
      const double duration = video.duration();
      runtime::ValueList clips;
      for (int64_t i = 0; double(i) * seconds_ < duration - 1e-3; ++i) {
        const double start = double(i) * seconds_;
        clips.push_back(Value::record({{"index", Value::integer(i)},
                                       {"start", Value::real(start)},
                                       {"end", Value::real(std::min(duration, start + seconds_))},
                                       {"path", Value::string(*path)}}));
      }
      results.push_back(RowResult::ok(Value::list(std::move(clips))));
    }
  }

private:
  double seconds_;
};

class FramesOperator : public runtime::Operator {
public:
  explicit FramesOperator(const OperatorConfig &config) : perClip_(config.intConstant("per_clip")) {
    if (perClip_ <= 0)
      throw runtime::OperatorError("video.frames: per_clip must be positive");
  }
  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    for (const OperatorRow &row : rows) {
      const std::string *path = stringField(row.inputs[0], "path");
      std::optional<double> start = numberField(row.inputs[0], "start"),
                            end = numberField(row.inputs[0], "end");
      if (!path || !start || !end) {
        results.push_back(
            RowResult::recordFailure("not a clip: " + row.inputs[0].str().substr(0, 80)));
        continue;
      }
      runtime::ValueList frames;
      const double step = (*end - *start) / double(perClip_);
      for (int64_t i = 0; i < perClip_; ++i)
        frames.push_back(Value::record({{"index", Value::integer(i)},
                                        {"time", Value::real(*start + (double(i) + 0.5) * step)},
                                        {"path", Value::string(*path)}}));
      results.push_back(RowResult::ok(Value::list(std::move(frames))));
    }
  }

private:
  int64_t perClip_;
};

/// video.decode: a batch's frames are decoded in (video, time) order, whatever clips they
/// come from, so that each clip's frames come out of one forward pass; results go back in the
/// batch's order.
class DecodeOperator : public runtime::Operator {
public:
  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    struct Request {
      size_t row;
      const std::string *path;
      std::optional<double> time;
    };
    std::vector<Request> requests;
    for (size_t r = 0; r < rows.size(); ++r)
      requests.push_back(Request{r, stringField(rows[r].inputs[0], "path"),
                                 numberField(rows[r].inputs[0], "time")});
    std::stable_sort(requests.begin(), requests.end(), [](const Request &a, const Request &b) {
      if (!a.path || !b.path || !a.time || !b.time)
        return bool(a.path && a.time) > bool(b.path && b.time);
      return std::tie(*a.path, *a.time) < std::tie(*b.path, *b.time);
    });
    std::vector<RowResult> decoded(rows.size());
    for (const Request &request : requests) {
      std::string problem = "not a frame: " + rows[request.row].inputs[0].str().substr(0, 80);
      if (!request.path || !request.time ||
          (video_.path() != *request.path && !video_.open(*request.path, problem))) {
        decoded[request.row] = RowResult::recordFailure(problem);
        continue;
      }
      std::optional<Value> image = video_.frameAt(*request.time, problem);
      decoded[request.row] =
          image ? RowResult::ok(std::move(*image)) : RowResult::recordFailure(problem);
    }
    for (RowResult &result : decoded)
      results.push_back(std::move(result));
  }

private:
  VideoFile video_;
};

} // namespace

void registerVideoOperators(runtime::OperatorRegistry &registry) {
  av_log_set_level(AV_LOG_QUIET);
  registry.addTransform("video.clips", [](const OperatorConfig &config) {
    return std::make_unique<ClipsOperator>(config);
  });
  registry.addTransform("video.frames", [](const OperatorConfig &config) {
    return std::make_unique<FramesOperator>(config);
  });
  registry.addTransform("video.decode",
                        [](const OperatorConfig &) { return std::make_unique<DecodeOperator>(); });
}

} // namespace orch::stdlib
