import os

HF_HOME = os.path.expanduser("~/.cache/huggingface")
HF_HUB_CACHE = os.path.join(HF_HOME, "hub")
HUGGINGFACE_HUB_CACHE = HF_HUB_CACHE
HF_HUB_OFFLINE = True
HF_HUB_DISABLE_TELEMETRY = True
ENDPOINT = "https://huggingface.co"
HF_TOKEN_PATH = os.path.join(HF_HOME, "token")


def __getattr__(name):
    return None
