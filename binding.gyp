{
  "targets": [
    {
      "target_name": "sluice_native",
      "sources": [
        "native/addon.cc",
        "native/dvb/ca.cc",
        "native/dvb/dvr.cc",
        "native/dvb/frontend.cc",
        "native/fs/durable_write.cc",
        "native/fs/file_lock.cc",
        "native/mem/pages.cc",
        "native/ts/crc32.cc",
        "native/ts/sections.cc",
        "native/ts/analyzer.cc",
        "native/ts/pid_router.cc",
        "native/ts/ts_analyzer.cc",
        "native/ts/biss.cc",
        "native/ts/biss_wrap.cc",
        "native/net/live_http.cc",
        "native/net/socket_opts.cc",
        "native/net/udp_hub.cc",
        "native/net/udp_receiver.cc",
        "native/transport/rist_receiver.cc",
        "native/transport/rist_sender.cc",
        "native/transport/srt_common.cc",
        "native/transport/srt_hub.cc",
        "native/transport/srt_receiver.cc",
        "native/transport/srt_sender.cc"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "native",
        "<!@(pkg-config --cflags-only-I librist | sed 's/-I//g')"
      ],
      "cflags": [
        "<!@(pkg-config --cflags srt)"
      ],
      "libraries": [
        "<!@(pkg-config --libs librist)",
        "<!@(pkg-config --libs srt)",
        "-ldvbcsa"
      ],
      "defines": [
        "NAPI_VERSION=8",
        "NAPI_CPP_EXCEPTIONS"
      ],
      "cflags!": [
        "-fno-exceptions"
      ],
      "cflags_cc!": [
        "-fno-exceptions"
      ],
      "cflags_cc": [
        "-std=c++17",
        "-O2",
        "-Wall",
        "-Wextra",
        "-fvisibility=hidden",
        "-fno-semantic-interposition"
      ]
    }
  ]
}
