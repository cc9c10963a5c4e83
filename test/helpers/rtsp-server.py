#!/usr/bin/python3
# A test RTSP server (GStreamer's gst-rtsp-server): serves /live, a test pattern in H.264 with a
# tone in AAC (mpeg4-generic), or HEVC / MP2T with --codec, on 127.0.0.1:PORT, optionally behind
# Basic or Digest authentication. Prints "ready" when it listens. Used by test/inputs/rtsp.test.ts.
# With --bframes N the video has N B-frames between I and P (no B-pyramid): x264/x265 without
# tune=zerolatency, which would turn B-frames off.
# Usage: rtsp-server.py PORT [--auth basic|digest] [--user U] [--password P] [--codec h264|hevc|mp2t]
#        [--bframes N]
import argparse
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtsp", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtsp, GstRtspServer  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("port", type=int)
ap.add_argument("--auth", choices=["none", "basic", "digest"], default="none")
ap.add_argument("--user", default="user")
ap.add_argument("--password", default="secret")
ap.add_argument("--codec", choices=["h264", "hevc", "mp2t"], default="h264")
ap.add_argument("--bframes", type=int, default=0)
a = ap.parse_args()

Gst.init(None)
VIDEO = "videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,framerate=25/1"
AUDIO = "audiotestsrc is-live=true wave=sine ! audio/x-raw,rate=48000,channels=2"
if a.bframes > 0:
    # Caps pinned (I420, Main): left free, rtph264pay negotiates a profile without B-frames.
    VIDEO += ",format=I420"
    X264 = (
        "x264enc speed-preset=ultrafast "
        f"option-string=bframes={a.bframes}:b-adapt=0:b-pyramid=none"
    )
    X265 = (
        "x265enc speed-preset=ultrafast "
        f'option-string="bframes={a.bframes}:b-adapt=0:b-pyramid=0:rc-lookahead=5"'
    )
else:
    X264 = "x264enc tune=zerolatency speed-preset=ultrafast"
    X265 = "x265enc tune=zerolatency speed-preset=ultrafast"
MAIN = "! video/x-h264,profile=main " if a.bframes > 0 else ""
if a.codec == "h264":
    launch = (
        f"( {VIDEO} ! {X264} key-int-max=25 bitrate=300 {MAIN}"
        f"! rtph264pay name=pay0 pt=96 config-interval=1 "
        f"{AUDIO} ! voaacenc bitrate=64000 ! rtpmp4gpay name=pay1 pt=97 )"
    )
elif a.codec == "hevc":
    launch = (
        f"( {VIDEO} ! {X265} key-int-max=25 bitrate=300 "
        f"! rtph265pay name=pay0 pt=96 config-interval=1 )"
    )
else:
    launch = (
        f"( {VIDEO} ! {X264} key-int-max=25 bitrate=300 "
        f"! h264parse ! mpegtsmux name=mux ! rtpmp2tpay name=pay0 pt=33 "
        f"{AUDIO} ! voaacenc bitrate=64000 ! aacparse ! mux. )"
    )

server = GstRtspServer.RTSPServer()
server.set_address("127.0.0.1")
server.set_service(str(a.port))
factory = GstRtspServer.RTSPMediaFactory()
factory.set_launch(launch)
factory.set_shared(True)
if a.auth != "none":
    auth = GstRtspServer.RTSPAuth()
    token = GstRtspServer.RTSPToken()
    token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, "user")
    if a.auth == "basic":
        auth.set_supported_methods(GstRtsp.RTSPAuthMethod.BASIC)
        auth.add_basic(GstRtspServer.RTSPAuth.make_basic(a.user, a.password), token)
    else:
        auth.set_supported_methods(GstRtsp.RTSPAuthMethod.DIGEST)
        auth.add_digest(a.user, a.password, token)
    server.set_auth(auth)
    perms = GstRtspServer.RTSPPermissions()
    perms.add_role_from_structure(
        Gst.Structure.new_from_string(
            "user, media.factory.access=(boolean)true, media.factory.construct=(boolean)true"
        )
    )
    factory.set_permissions(perms)
server.get_mount_points().add_factory("/live", factory)
if server.attach(None) == 0:
    print("cannot listen", file=sys.stderr)
    sys.exit(1)
print("ready", flush=True)
GLib.MainLoop().run()
