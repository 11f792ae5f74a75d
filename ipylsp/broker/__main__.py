"""`python -m ipylsp.broker`: the broker process, as a client starts it (`client._spawn`)."""

import sys

from ipylsp.broker.serve import main

sys.exit(main())
