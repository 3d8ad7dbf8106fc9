#!/usr/bin/env bash
# Installs the interop clients the black-box tests need, and Chromium for
# the report and console tests, when missing.
# kcat is librdkafka's CLI; python3-kafka (kafka-python) and
# python3-confluent-kafka are seen only by /usr/bin/python3.
set -euo pipefail

need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
/usr/bin/python3 -c 'import kafka' >/dev/null 2>&1 || need+=(python3-kafka)
/usr/bin/python3 -c 'import confluent_kafka' >/dev/null 2>&1 || need+=(python3-confluent-kafka)
# kafka-python compresses in Python, with these optional codec modules.
/usr/bin/python3 -c 'import snappy' >/dev/null 2>&1 || need+=(python3-snappy)
/usr/bin/python3 -c 'import lz4.frame' >/dev/null 2>&1 || need+=(python3-lz4)
/usr/bin/python3 -c 'import zstandard' >/dev/null 2>&1 || need+=(python3-zstandard)
# test/verify opens weir verify's HTML report in headless Chromium;
# test/console drives the web console in it (chromedp).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0

echo "installing test dependencies: ${need[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${need[@]}" >/dev/null
